import Base
import Fates
import Impairment
import Testing

/// The configuration's own checks (`validate`) and the replay's stream choice, whatever built the
/// configuration. The flags that build it are tested with the command (CommandLineTests).
struct ImpairmentConfigTests {
    private func config(_ edit: (inout ImpairmentConfig) -> Void = { _ in }) -> ImpairmentConfig {
        var c = ImpairmentConfig(listen: Endpoint(address: .v4(0x7F00_0001), port: 5300),
                                 upstream: Endpoint(address: .v4(0x7F00_0001), port: 53), seed: 1)
        edit(&c)
        return c
    }

    @Test func aPlainConfigurationPasses() throws {
        try config().validate()
        try config { $0.down.loss = .gilbertElliott(.init(p: 0.02, r: 0.25, h: 0.1, k: 0.99)); $0.up.delayMs = 5; $0.up.jitterMs = 2 }.validate()
    }

    @Test(arguments: [
        ({ @Sendable (c: inout ImpairmentConfig) in c.up.loss = .bernoulli(1.5) }, ImpairmentConfigError.Setting.loss, Direction?.some(.up)),
        ({ @Sendable (c: inout ImpairmentConfig) in c.down.loss = .bernoulli(.nan) }, .loss, .down),
        ({ @Sendable (c: inout ImpairmentConfig) in c.up.loss = .gilbertElliott(.init(p: 0, r: 0)) }, .gilbertElliott, .up),
        ({ @Sendable (c: inout ImpairmentConfig) in c.up.jitterMs = 3 }, .jitter, .up),
        ({ @Sendable (c: inout ImpairmentConfig) in c.up.delayMs = -5 }, .delay, .up),
        ({ @Sendable (c: inout ImpairmentConfig) in c.up.reorder = Reordering(probability: 0.1, gap: 0) }, .reorder, .up),
        ({ @Sendable (c: inout ImpairmentConfig) in c.down.duplicate = 1.01 }, .duplicate, .down),
        ({ @Sendable (c: inout ImpairmentConfig) in c.up.rate = 0 }, .rate, .up),
        ({ @Sendable (c: inout ImpairmentConfig) in c.up.rateQueue = 5 }, .rateQueue, .up),
        ({ @Sendable (c: inout ImpairmentConfig) in c.down.oversize = .truncate }, .oversize, .down),
        ({ @Sendable (c: inout ImpairmentConfig) in c.up.maxSize = 100; c.up.oversize = .truncate }, .oversize, .up),
        ({ @Sendable (c: inout ImpairmentConfig) in c.down.maxSize = 5 }, .maxSize, .down),
        ({ @Sendable (c: inout ImpairmentConfig) in c.up.maxQName = 0 }, .maxQName, .up),
        ({ @Sendable (c: inout ImpairmentConfig) in c.servfail = 2 }, .servfail, nil),
        ({ @Sendable (c: inout ImpairmentConfig) in c.replayResolver = "192.0.2.1:53" }, .replayResolver, nil),
        ({ @Sendable (c: inout ImpairmentConfig) in c.upstream = c.listen }, .listenAndUpstream, nil),
        ({ @Sendable (c: inout ImpairmentConfig) in c.vectorReads = 0 }, .vectorReads, nil),
        ({ @Sendable (c: inout ImpairmentConfig) in c.mappingIdleSeconds = 0 }, .mappingIdle, nil),
    ] as [(@Sendable (inout ImpairmentConfig) -> Void, ImpairmentConfigError.Setting, Direction?)])
    func eachProblemNamesItsSetting(edit: @Sendable (inout ImpairmentConfig) -> Void, setting: ImpairmentConfigError.Setting, direction: Direction?) {
        do {
            try config(edit).validate()
            Issue.record("\(setting) was taken")
        } catch {
            #expect(error.setting == setting && error.direction == direction && !error.reason.isEmpty, "\(error)")
            #expect(!error.description.contains("\n") && !error.reason.contains("--"), "\(error)")
        }
    }

    @Test func replayPicksStreamsAndRefusesModelsOfTheSameDirection() throws {
        let packet = PacketFate(sentMs: 0, size: 60, delivered: true)
        let trace = FateTrace(source: .init(kind: "model", description: "test"), streams: [
            FateStream(resolver: "192.0.2.1:53", direction: .roundTrip, packets: [packet]),
            FateStream(resolver: "192.0.2.2:53", direction: .up, packets: [packet]),
            FateStream(resolver: "192.0.2.2:53", direction: .down, packets: [packet]),
        ])
        let first = try config { $0.replayPath = "f.json" }.plan(for: trace)
        #expect(first.up?.resolver == "192.0.2.2:53" && first.up?.direction == .up && first.down?.resolver == "192.0.2.2:53")
        let rt = try config { $0.replayPath = "f.json"; $0.replayResolver = "192.0.2.1:53"; $0.down.loss = .bernoulli(0.1) }.plan(for: trace)
        #expect(rt.up?.direction == .roundTrip && rt.down == nil)
        #expect { try config { $0.replayPath = "f.json"; $0.up.loss = .bernoulli(0.1) }.plan(for: trace) } throws: { error in
            (error as? ImpairmentConfigError).map { $0.setting == .replayAndModel && $0.direction == .up } ?? false
        }
        #expect(throws: ImpairmentConfigError.self) { try config { $0.replayPath = "f.json"; $0.replayResolver = "192.0.2.9:53" }.plan(for: trace) }
        #expect(throws: ImpairmentConfigError.self) { try config { $0.replayPath = "/nonexistent/fates.json" }.loadReplay() }
    }
}
