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

    /// `--direction both` runs download then upload; the report names them in the flag's words and the
    /// streams by their fates/1 names, as before the directions became Base's `Direction`.
    @Test func bothDirectionsAreNamedAsTheFlagAndTheFatesFileName() throws {
        var request = SimulationRequest(source: .fates(Self.trace(), file: "f.json", sha256: "ab"))
        request.direction = .both
        request.runs = 1
        request.levels = [.none, .balanced]
        request.opportunities = 2000
        let report = try SimulateReport(Simulation.run(request), run: Self.info)
        #expect(report.settings.direction == "both")
        #expect(report.input.streams.map(\.direction) == ["download", "upload"])
        #expect(report.input.streams.map(\.data) == ["down", "up"] && report.input.streams.map(\.feedback) == ["up", "down"])
        #expect(report.levels.map(\.direction) == ["download", "download", "upload", "upload"])
        #expect(report.recommendations.map(\.direction) == ["download", "upload"])
        #expect(SimulationRequest.Transfer.allCases.map(\.rawValue) == ["download", "upload", "both"])
        #expect(SimulationRequest.Transfer(rawValue: "upload") == .oneWay(.up) && SimulationRequest.Transfer(rawValue: "up") == nil)
        #expect(SimulationRequest.Transfer.both.directions == [.down, .up])
    }

    /// The simulator's model is the shared loss process plus its own delay and rate: its text reads back,
    /// and its own checks come before the loss process's, as they always did.
    @Test func aModelsTextReadsBackWithItsDelayAndRate() throws {
        let ge = try LossModel.parse("ge:p=0.01,r=0.3,h=0.2,k=0.99,delay=50,rate=2000")
        #expect(ge == LossModel(.gilbertElliott(.init(p: 0.01, r: 0.3, h: 0.2, k: 0.99)), delayMs: 50, opportunitiesPerSecond: 2000))
        #expect(ge.description == "ge:p=0.01,r=0.3,h=0.2,k=0.99,delay=50.0,rate=2000.0")
        #expect(try LossModel.parse(ge.description) == ge)
        let bernoulli = try LossModel.parse("bernoulli:p=0.05")
        #expect(bernoulli.description == "bernoulli:p=0.05,delay=100.0,rate=500.0")
        #expect(try LossModel.parse(bernoulli.description) == bernoulli)
        #expect(throws: TextFormError("delay must be 0...600000 ms")) { try LossModel.parse("bernoulli:delay=-1") }
        #expect(throws: TextFormError("rate must be in (0, 1000000] per second")) { try LossModel.parse("ge:rate=0,p=2") }
        #expect(throws: TextFormError("p must be in [0, 1], got 1.5")) { try LossModel.parse("bernoulli:p=1.5,delay=5") }
        #expect(throws: TextFormError("\"size=3\" is not one of p=, r=, h=, k=, delay=, rate=")) { try LossModel.parse("ge:size=3") }
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
