import Fates
import Base
import Foundation
import Impairment
import Testing
@testable import TunnelprobeCommands

/// `impair`'s flags (also `lab up --impair`): every model reaches the config, and every contradiction
/// is one clear line that names its flag.
struct ImpairOptionsTests {
    private let endpoints = ["--listen", "127.0.0.1:5300", "--upstream", "127.0.0.1:53"]

    @Test func everyFlagReachesTheConfig() throws {
        let c = try parseImpair(endpoints + [
            "--seed", "42", "--log", "/tmp/x.jsonl",
            "--up-loss", "0.01", "--down-ge", "p=0.02,r=0.25,h=0.1,k=0.99",
            "--up-delay", "5", "--up-jitter", "2", "--down-delay=1.5",
            "--up-reorder", "0.05:3", "--down-reorder", "0.1",
            "--up-duplicate", "0.01", "--down-rate", "500", "--down-rate-burst", "4", "--down-rate-queue", "20",
            "--up-max-qname", "200", "--down-max-size", "1232", "--down-oversize", "truncate",
            "--servfail", "0.001", "--mapping-idle", "5", "--vector-reads", "32",
        ])
        #expect(c.listen == Endpoint(address: IPAddress("127.0.0.1")!, port: 5300) && c.upstream.port == 53)
        #expect(c.seed == 42 && c.logPath == "/tmp/x.jsonl")
        #expect(c.up.loss == .bernoulli(0.01))
        #expect(c.down.loss == .gilbertElliott(.init(p: 0.02, r: 0.25, h: 0.1, k: 0.99)))
        #expect(c.up.delayMs == 5 && c.up.jitterMs == 2 && c.down.delayMs == 1.5)
        #expect(c.up.reorder == Reordering(probability: 0.05, gap: 3) && c.down.reorder == Reordering(probability: 0.1, gap: 1))
        #expect(c.up.duplicate == 0.01)
        #expect(c.down.rate == 500 && c.down.rateBurst == 4 && c.down.rateQueue == 20)
        #expect(c.up.maxQName == 200 && c.down.maxSize == 1232 && c.down.oversize == .truncate)
        #expect(c.servfail == 0.001 && c.mappingIdleSeconds == 5 && c.vectorReads == 32)
    }

    @Test func defaults() throws {
        let c = try parseImpair(endpoints)
        #expect(c.seed == 1 && c.logPath == nil && c.up.isIdentity && c.down.isIdentity && c.servfail == 0)
        let ge = try parseImpair(endpoints + ["--up-ge", "p=0.01,r=0.3"])
        #expect(ge.up.loss == .gilbertElliott(.init(p: 0.01, r: 0.3, h: 0, k: 1)))
        let lab = try parseImpair(["--up-loss", "0.1"], requireEndpoints: false)
        #expect(lab.up.loss == .bernoulli(0.1))
        let v6 = try parseImpair(["--listen", "[::1]:5300", "--upstream", "[2001:db8::1]:53"])
        #expect(v6.listen.description == "[::1]:5300")
    }

    /// Each contradiction or bad value gives the named flag and a reason.
    @Test(arguments: [
        (["--up-loss", "0.1", "--up-ge", "p=0.1,r=0.2"], "--up-loss/--up-ge"),
        (["--down-loss", "1.5"], "--down-loss"),
        (["--down-loss", "-0.1"], "--down-loss"),
        (["--up-loss", "nan"], "--up-loss"),
        (["--servfail", "2"], "--servfail"),
        (["--up-duplicate", "1.01"], "--up-duplicate"),
        (["--up-reorder", "1.2:3"], "--up-reorder"),
        (["--up-reorder", "0.1:0"], "--up-reorder"),
        (["--up-reorder", "0.1:2:3"], "--up-reorder"),
        (["--up-delay", "-5"], "--up-delay"),
        (["--up-jitter", "3"], "--up-jitter"),
        (["--up-delay", "0", "--up-jitter", "3"], "--up-jitter"),
        (["--up-jitter", "-1", "--up-delay", "3"], "--up-jitter"),
        (["--up-ge", "p=0.1"], "--up-ge"),
        (["--up-ge", "p=0.1,r=2"], "--up-ge"),
        (["--up-ge", "p=0.1,r=0.2,x=1"], "--up-ge"),
        (["--up-ge", "p=0,r=0"], "--up-ge"),
        (["--up-rate", "0"], "--up-rate"),
        (["--up-rate-queue", "5"], "--up-rate-queue"),
        (["--down-oversize", "truncate"], "--down-oversize"),
        (["--down-max-size", "100", "--down-oversize", "shrink"], "--down-oversize"),
        (["--up-max-size", "100", "--up-oversize", "truncate"], "--up-oversize"),
        (["--down-max-size", "5"], "--down-max-size"),
        (["--up-max-qname", "0"], "--up-max-qname"),
        (["--replay-resolver", "192.0.2.1:53"], "--replay-resolver"),
        (["--seed", "-1"], "--seed"),
        (["--up-lose", "0.1"], "--up-lose"),
        (["--up-loss"], "--up-loss"),
        (["stray"], "stray"),
    ] as [([String], String)])
    func contradictionsAreOneClearError(flags: [String], flag: String) {
        do {
            let config = try parseImpair(endpoints + flags)
            Issue.record("\(flags) was taken: \(config)")
        } catch {
            let line = impairMessage(error)
            #expect(line.hasPrefix(flag) || line.contains("'\(flag)"), "\(flags): \(line)")
            #expect(!line.contains("\n") && line.count > flag.count + 2, "\(line)")
        }
    }

    @Test(arguments: [
        (["--upstream", "127.0.0.1:53"], "--listen"),
        (["--listen", "127.0.0.1:53"], "--upstream"),
        (["--listen", "127.0.0.1:53", "--upstream", "127.0.0.1:53"], "--listen/--upstream"),
        (["--listen", "localhost:53", "--upstream", "127.0.0.1:53"], "--listen"),
        (["--listen", "127.0.0.1:99999", "--upstream", "127.0.0.1:53"], "--listen"),
        (["--listen", "127.0.0.1:5300", "--upstream", "127.0.0.1"], "--upstream"),
    ] as [([String], String)])
    func endpointsAreChecked(flags: [String], flag: String) {
        do {
            _ = try parseImpair(flags)
            Issue.record("\(flags) was taken")
        } catch {
            #expect(impairMessage(error).hasPrefix(flag + ":"), "\(impairMessage(error))")
        }
    }

    @Test func replayPicksStreamsAndRefusesModelsOfTheSameDirection() throws {
        let packet = PacketFate(sentMs: 0, size: 60, delivered: true)
        let trace = FateTrace(source: .init(kind: "model", description: "test"), streams: [
            FateStream(resolver: "192.0.2.1:53", direction: .roundTrip, packets: [packet]),
            FateStream(resolver: "192.0.2.2:53", direction: .up, packets: [packet]),
            FateStream(resolver: "192.0.2.2:53", direction: .down, packets: [packet]),
        ])
        let plain = try parseImpair(endpoints + ["--replay", "f.json"])
        let first = try plain.plan(for: trace)
        #expect(first.up?.resolver == "192.0.2.2:53" && first.up?.direction == .up && first.down?.resolver == "192.0.2.2:53")
        let one = try parseImpair(endpoints + ["--replay", "f.json", "--replay-resolver", "192.0.2.1:53", "--down-loss", "0.1"])
        let rt = try one.plan(for: trace)
        #expect(rt.up?.direction == .roundTrip && rt.down == nil)
        let clash = try parseImpair(endpoints + ["--replay", "f.json", "--up-loss", "0.1"])
        #expect(throws: ImpairmentConfigError.self) { try clash.plan(for: trace) }
        let missing = try parseImpair(endpoints + ["--replay", "f.json", "--replay-resolver", "192.0.2.9:53"])
        #expect(throws: ImpairmentConfigError.self) { try missing.plan(for: trace) }
        let unreadable = try parseImpair(endpoints + ["--replay", "/nonexistent/fates.json"])
        #expect(throws: ImpairmentConfigError.self) { try unreadable.loadReplay() }
    }
}

/// What `impair` reads from `arguments`, checked; throws ArgumentParser's error or the config's.
func parseImpair(_ arguments: [String], requireEndpoints: Bool = true) throws -> ImpairmentConfig {
    try ImpairOptions.parse(arguments).config(requireEndpoints: requireEndpoints)
}

/// The one line `impair` prints for `error`.
func impairMessage(_ error: any Error) -> String {
    if let error = error as? ImpairmentConfigError { return ImpairOptions.message(error) }
    return ImpairOptions.message(for: error)
}
