import Fates
import Base
import FEC
import Foundation
import LinkSim
import Reports
import Testing
import Results

@Suite struct SimulationTests {
    static let info = RunInfo(id: "t", version: "0", commandLine: [], vantage: "test", seed: 9, startedAt: "t")

    static func trace() -> FateTrace {
        var down: [PacketFate] = []
        var up: [PacketFate] = []
        var rng = SplitMix64(seed: 5)
        for i in 0..<3000 {
            let t = Double(i) * 2
            let lostDown = rng.unitInterval() < 0.05
            down.append(PacketFate(sentMs: t, size: 600, delivered: !lostDown, delayMs: lostDown ? nil : 40 + rng.unitInterval() * 20))
            let lostUp = rng.unitInterval() < 0.02
            up.append(PacketFate(sentMs: t, size: 90, delivered: !lostUp, delayMs: lostUp ? nil : 40))
        }
        return FateTrace(source: .init(kind: "path", description: "synthetic"), streams: [
            FateStream(resolver: "198.51.100.7:53", direction: .down, packets: down),
            FateStream(resolver: "198.51.100.7:53", direction: .up, packets: up),
        ])
    }

    @Test func theSameFatesAndSeedGiveTheSameReport() throws {
        var request = SimulationRequest(source: .fates(Self.trace(), file: "f.json", sha256: "ab"))
        request.runs = 2
        request.seed = 77
        let a = try SimulateReport(Simulation.run(request), run: Self.info)
        let b = try SimulateReport(Simulation.run(request), run: Self.info)
        // CPU times differ between runs; everything else must not.
        func strip(_ r: SimulateReport) -> SimulateReport {
            var r = r
            for i in r.levels.indices {
                r.levels[i].isal.encodeMicrosPerGroup = nil
                r.levels[i].isal.decodeMicrosPerGroup = nil
            }
            return r
        }
        #expect(strip(a) == strip(b))
        #expect(a.levels.map(\.level) == ["none", "conservative", "balanced", "aggressive"])
        #expect(a.input.streams.first?.data == "down" && a.input.streams.first?.feedback == "up")
        #expect(a.isal.groupsVerified > 0 && a.isal.mismatches == 0)
        #expect(a.recommendation != nil)
        let none = try #require(a.levels.first)
        #expect(none.residualLoss == 0)
        #expect(none.repairedByARQ > 0)
    }

    @Test func aRoundTripOnlyTraceRunsWithFeedbackOnTheSameStream() throws {
        var t = Self.trace()
        t.streams = [FateStream(resolver: "198.51.100.7:53", direction: .roundTrip, packets: t.streams[0].packets)]
        var request = SimulationRequest(source: .fates(t, file: "f.json", sha256: "ab"))
        request.runs = 1
        request.levels = [.none, .balanced]
        let report = try SimulateReport(Simulation.run(request), run: Self.info)
        #expect(report.input.streams.first?.feedback == "roundTrip")
        #expect(report.levels.count == 2)
    }

    @Test func badInputGivesOneClearReason() throws {
        #expect(throws: TextFormError.self) { try LossModel.parse("bernoulli:p=1.5") }
        #expect(throws: TextFormError.self) { try LossModel.parse("ge:p=0.1,r=-0.1,h=0") }
        #expect(throws: TextFormError.self) { try LossModel.parse("ge:p=0.1") }
        #expect(throws: TextFormError.self) { try LossModel.parse("gauss:p=0.1") }
        #expect(throws: TextFormError.self) { try TrafficPattern.parse("cbr") }
        #expect(throws: TextFormError.self) { try TrafficPattern.parse("bulk:speed=3") }
        #expect(try LossModel.parse("ge:p=0.01,r=0.25,h=0.5").meanLoss == 0.01 / 0.26 * 0.5)
        var request = SimulationRequest(source: .fates(Self.trace(), file: "f", sha256: "x"))
        request.direction = .upload
        request.resolver = "203.0.113.1:53"
        #expect(throws: SimulationError.self) { try SimulateReport(Simulation.run(request), run: Self.info) }
        #expect(throws: FateTraceError.self) { try FateTrace.decode(Data()) }
        #expect(throws: FateTraceError.self) { try FateTrace.decode(Data("{\"schema\":\"tunnelprobe.fates/1\"".utf8)) }
    }
}
