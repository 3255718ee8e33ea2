import ArgumentParser
import DNSWire
import ProbeClient
import Testing
@testable import TunnelprobeCommands
import Results

/// `scan` and `sweep` take the MTU-scan flags from one option group: the same names, defaults and
/// checks, and the same `ScanConfiguration` from the same flags.
struct MTUScanOptionsTests {
    private let scan = ["--resolver", "192.0.2.1", "--domain", "vpn.lab.test", "--key-file", "/nonexistent.key"]
    private let sweep = ["--ranges", "/nonexistent.txt", "--domain", "vpn.lab.test", "--key-file", "/nonexistent.key"]

    private func configuration(_ options: MTUScanOptions, concurrency: Int) -> ScanConfiguration {
        var c = ScanConfiguration(resolvers: [], domains: [])
        options.apply(to: &c, concurrency: concurrency, seed: 9)
        return c
    }

    @Test func scanAndSweepReadTheSameFlagsTheSameWay() throws {
        let flags = ["--timeout", "1.5", "--attempts", "3", "--per-resolver-qps", "0", "--no-congestion-control",
                     "--confirm", "5", "--max-loss", "0.1", "--engine", "dnstt,iodine"]
        let s = try ScanCommand.parse(scan + flags)
        let w = try SweepCommand.parse(sweep + flags)
        for options in [s.mtuScan, w.mtuScan] {
            let c = configuration(options, concurrency: 7)
            #expect(c.timeout == .milliseconds(1500) && c.attempts == 3 && c.perResolverQPS == 0 && !c.congestionControl)
            #expect(c.confirmProbes == 5 && c.maxLoss == 0.1 && c.concurrency == 7 && c.seed == 9)
            #expect(options.engines == [.dnstt, .iodine] && options.pacer == nil)
        }
        #expect(ScanConfiguration.recordTypes(answering: s.mtuScan.engines) == [.txt, .null])
    }

    @Test func theDefaultsAreScansAndEachCommandKeepsItsConcurrency() throws {
        let s = try ScanCommand.parse(scan)
        let w = try SweepCommand.parse(sweep)
        for options in [s.mtuScan, w.mtuScan] {
            let c = configuration(options, concurrency: 1)
            #expect(c.timeout == .seconds(2) && c.attempts == 2 && c.perResolverQPS == 100 && c.congestionControl)
            #expect(c.confirmProbes == 3 && c.maxLoss == ScanConfiguration.defaultMaxLoss && options.engines == Engine.allCases)
        }
        #expect(s.concurrency == 256 && w.concurrency == 64)
        // Every engine's record type, TXT first: TXT for MasterDnsVPN, dnstt and slipstream, NULL for iodine.
        #expect(ScanConfiguration.recordTypes(answering: Engine.allCases) == [.txt, .null])
        #expect(ScanConfiguration.recordTypes(answering: [.masterDnsVPNGo]) == [.txt])
    }

    /// A bad value is refused by both commands, and the message names the flag.
    @Test(arguments: [
        (["--timeout", "0"], "--timeout"), (["--timeout", "61"], "--timeout"), (["--attempts", "11"], "--attempts"),
        (["--per-resolver-qps", "-1"], "--per-resolver-qps"), (["--confirm", "101"], "--confirm"),
        (["--max-loss", "1.5"], "--max-loss"), (["--engine", "dnstt,bogus"], "--engine"), (["--engine", ","], "--engine"),
        (["--concurrency", "0"], "--concurrency"),
    ] as [([String], String)])
    func badValuesAreRefusedByBoth(flags: [String], flag: String) {
        for (command, base) in [(ScanCommand.self as any ParsableCommand.Type, scan), (SweepCommand.self, sweep)] {
            do {
                _ = try command.parse(base + flags)
                Issue.record("\(command) took \(flags)")
            } catch {
                let message = command.message(for: error)
                #expect(message.contains(flag), "\(command) \(flags): \(message)")
            }
        }
    }

    @Test func anUnknownEngineNamesTheEnginesTaken() {
        #expect(EngineList(argument: "bogus") == nil)
        #expect(EngineList(argument: " ALL ") == .all)
        #expect(EngineList(argument: "mdv, dnstt,dnstt")?.engines == [.masterDnsVPNGo, .dnstt])
        do {
            _ = try ScanCommand.parse(scan + ["--engine", "bogus"])
            Issue.record("took --engine bogus")
        } catch {
            let message = ScanCommand.message(for: error)
            #expect(message.contains("'bogus'") && message.contains("masterdnsvpn-python") && message.contains("iodine"), "\(message)")
        }
    }
}
