import EngineModels
import Foundation
import ProbeClient
import Reports
import Testing
import Results

@Suite struct RankReportTests {
    static func pair(_ resolver: String, upChars: Int = 237, downBytes: Int = 900) -> ScanPair {
        ScanPair(resolver: resolver, domain: "vpn.lab.test", accepted: true,
                 upload: .init(bytes: 148, qnameChars: 253, payloadChars: upChars, encoding: "base32", limitedBy: nil, caseChanged: false),
                 download: .init(bytes: downBytes, responseSize: downBytes + 300, recordType: "TXT", limitedBy: .resolverLimit),
                 rttMs: 1.5, confirmation: .init(sent: 6, succeeded: 6), queries: 20)
    }

    static func capacity(_ resolver: String, rate: Double, loss: Int = 0) -> PairCapacity {
        PairCapacity(resolver: resolver, domain: "vpn.lab.test", queryCharacters: 237, answerBytes: 900, steps: [],
                     sustainableRate: rate, troubledRate: rate * 1.1, limitedBy: .rateLimiter, evidence: "test",
                     lossAtSustainable: .init(count: loss, samples: 100), rttAtSustainableMs: .nearestRank([1, 2, 3]), recovered: true,
                     seconds: 1)
    }

    static let run = RunInfo(id: "20261125-000000-rank-1", version: "0", commandLine: ["tunnelprobe", "rank"], vantage: "lab",
                             seed: 7, startedAt: "2026-11-25T00:00:00Z")

    /// Issue 29: rank.md and the page name each pair's transport and, when a pair went over TCP,
    /// TLS or HTTPS, give the per-transport medians with the first query and the connections.
    @Test func pairsNameTheirTransportAndStreamsGetTheirOwnTable() throws {
        var dot = Self.capacity("tls://192.0.2.2:853#dns.example", rate: 60)
        dot.transport = .tls
        dot.firstQueryMs = 12.5
        dot.connections = ConnectionCounts(opened: 2, failed: 1, failures: ["handshakeTimeout": 1])
        let udp = Self.capacity("192.0.2.1:53", rate: 120)
        let report = RankReport(run: Self.run, scan: Self.run, settings: CapacitySettings(), pairs: [udp, dot], engines: [], notMeasured: [])
        let markdown = report.markdown()
        #expect(markdown.contains("| 192.0.2.1:53 | udp | vpn.lab.test | 120 |"))
        #expect(markdown.contains("| tls://192.0.2.2:853#dns.example | tls | vpn.lab.test | 60.0 |"))
        #expect(markdown.contains("## Per transport"))
        #expect(markdown.contains("| udp | 1 | 120 | 2.0 | - | - |"))
        #expect(markdown.contains("| tls | 1 | 60.0 | 2.0 | 12.5 | 2 / 1 (handshakeTimeout 1) |"))
        let html = report.htmlSection()
        #expect(html.contains("Per transport") && html.contains("handshakeTimeout 1"))
        // Only UDP: no per-transport table (the reports of before issue 29 stay as they were).
        let plain = RankReport(run: Self.run, scan: Self.run, settings: CapacitySettings(), pairs: [udp], engines: [], notMeasured: [])
        #expect(!plain.markdown().contains("Per transport") && !plain.htmlSection().contains("Per transport"))
        #expect(try JSONDecoder().decode(RankReport.self, from: Data(try ReportWriter.json(report).utf8)) == report)
    }

    /// Ranked by goodput (rate x (1 - loss) x payload per query), best first in the engine's file;
    /// the plan takes the fewest, the last at only the rate still needed.
    @Test func rankingPlanAndExports() throws {
        let pairs = ["192.0.2.1:53", "192.0.2.2:53", "192.0.2.3:53"].map { Self.pair($0) }
        let scan = try #require(EngineScan.all([.masterDnsVPNGo], pairs: pairs).first)
        let perQuery = try #require(scan.synced.usable.first?.download.payloadBytes)
        let capacities = [Self.capacity("192.0.2.1:53", rate: 40), Self.capacity("192.0.2.2:53", rate: 120),
                          Self.capacity("192.0.2.3:53", rate: 100, loss: 50)]
        let target = 150.0 * Double(perQuery)
        let ranking = EngineRanking.build(scan, capacities: capacities, target: (direction: .down, bytesPerSecond: target))
        #expect(ranking.pairs.map(\.resolver) == ["192.0.2.2:53", "192.0.2.3:53", "192.0.2.1:53"])
        #expect(ranking.pairs[1].downloadGoodput == 50 * Double(perQuery))
        let plan = try #require(ranking.plan)
        #expect(plan.reachable && plan.uses.map(\.resolver) == ["192.0.2.2:53", "192.0.2.3:53"])
        #expect(abs(plan.uses[1].rate - 60) < 1e-9 && abs(plan.totalGoodput - target) < 1e-6)
        let file = try #require(ranking.exports.first { $0.name == "client_resolvers.txt" })
        #expect(file.text.split(separator: "\n").filter { !$0.hasPrefix("#") } == ["192.0.2.2", "192.0.2.3", "192.0.2.1"])
        let planFile = try #require(ranking.planExports?.first { $0.name == "client_resolvers.txt" })
        #expect(planFile.text.split(separator: "\n").filter { !$0.hasPrefix("#") } == ["192.0.2.2", "192.0.2.3"])
        // Out of reach: says so and what all of them move.
        let far = EngineRanking.build(scan, capacities: capacities, target: (direction: .down, bytesPerSecond: 1e9))
        #expect(far.plan?.reachable == false && far.plan?.sentence.contains("out of reach") == true)

        let report = RankReport(run: Self.run, scan: Self.run, settings: CapacitySettings(), pairs: capacities,
                                engines: [ranking], notMeasured: [])
        let json = try ReportWriter.json(report)
        let back = try JSONDecoder().decode(RankReport.self, from: Data(json.utf8))
        #expect(back == report && back.run.seed == 7)
        let md = report.markdown()
        #expect(md.contains("RFC 7680") && md.contains("RFC 2681") && md.contains("RFC 2544") && md.contains("**Plan:**"))
        let html = report.htmlSection()
        #expect(html.contains("id=\"rank\"") && html.contains("Plan:"))
        #expect(report.exportFiles().contains { $0.0 == "exports/masterdnsvpn-go/plan/client_resolvers.txt" })
    }

    @Test func settingsAreChecked() {
        var s = CapacitySettings()
        #expect(s.problem() == nil)
        s.ceiling = 5
        #expect(s.problem() != nil)
        s = CapacitySettings()
        s.growth = 1
        #expect(s.problem() != nil)
    }

    /// rank/1 and monitor/2 wrote a rate step's loss as count/total/ratio/low/high and its RTT
    /// without `samples`: both still read into the shared `Proportion` and `Percentiles`, and write
    /// back in the one form.
    @Test func rateStepFiguresOfEarlierSchemasStillRead() throws {
        let loss = try JSONDecoder().decode(Proportion.self, from: Data(#"{"count": 2, "total": 100, "ratio": 0.02, "low": 0.0055, "high": 0.0700}"#.utf8))
        #expect(loss.count == 2 && loss.samples == 100 && loss.ratio == 0.02 && loss.ciLow == 0.0055 && loss.ciHigh == 0.07)
        let rtt = try JSONDecoder().decode(Percentiles.self, from: Data(#"{"p50": 1.5, "p90": 2, "p99": 3, "max": 4}"#.utf8))
        #expect(rtt.samples == 0 && rtt.p50 == 1.5 && rtt.max == 4 && rtt.min == nil)
        let written = try ReportWriter.json(Proportion(count: 2, samples: 100))
        #expect(written.contains("\"samples\" : 100") && written.contains("\"ciLow\"") && !written.contains("\"total\""))
        // A loss with neither key is refused, not read as an empty sample.
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Proportion.self, from: Data(#"{"count": 2}"#.utf8)) }
        #expect(ReportKind.rank.readableSchemas == ["tunnelprobe.rank/2", "tunnelprobe.rank/1"])
    }

    /// Nearest-rank percentiles keep every value a measured one.
    @Test func percentiles() throws {
        let p = try #require(Percentiles.nearestRank((1...100).map(Double.init)))
        #expect(p.p50 == 50 && p.p90 == 90 && p.p99 == 99 && p.max == 100 && p.min == 1 && p.samples == 100)
        #expect(Percentiles.nearestRank([]) == nil)
    }
}

@Suite struct PairStabilityTests {
    /// Up, down for two checks, up again: one outage with both ends, two transitions, the pass share.
    @Test func outagesAndCounts() throws {
        var p = PairStability(resolver: "192.0.2.1:53", domain: "vpn.lab.test", spare: false)
        let changes = [p.record(ok: true, at: 0, rttMs: 2, failure: nil), p.record(ok: false, at: 1, rttMs: nil, failure: "timeout"),
                       p.record(ok: false, at: 2, rttMs: nil, failure: "timeout"), p.record(ok: true, at: 3, rttMs: 4, failure: nil)]
        #expect(changes == [false, true, false, true])
        #expect(p.checks == 4 && p.passed == 2 && p.up && p.transitions == 2 && p.lastFailureAt == 2)
        #expect(p.outages.count == 1 && p.outages.first?.downAt == 1 && p.outages.first?.upAt == 3 && p.outages.first?.failure == "timeout")
        #expect(p.rttP50Ms == 2 && p.passRatio == 0.5)
    }

    /// However long it runs, only the latest outages are held (memory stays flat).
    @Test func outagesAreBounded() {
        var p = PairStability(resolver: "192.0.2.1:53", domain: "vpn.lab.test", spare: true)
        for i in 0..<1000 { p.record(ok: i % 2 == 0, at: Double(i), rttMs: 1, failure: "timeout") }
        #expect(p.outages.count == PairStability.maxOutages && p.outagesDropped == 500 - PairStability.maxOutages)
        #expect(p.checks == 1000 && p.transitions == 999)
    }

    @Test func reportRendersAndRoundTrips() throws {
        var p = PairStability(resolver: "192.0.2.1:53", domain: "vpn.lab.test", spare: false)
        p.record(ok: true, at: 0, rttMs: 1, failure: nil)
        let report = MonitorReport(run: RankReportTests.run, scan: RankReportTests.run, intervalSeconds: 60, attempts: 2, timeoutMs: 2000,
                                   rounds: 1, checks: 1, elapsedSeconds: 1, pairs: [p], rewrites: 0, rewriteTimes: [],
                                   memory: [.init(checks: 1, rssKB: 1000)], engines: ["masterdnsvpn-go"])
        let json = try ReportWriter.json(report)
        let back = try JSONDecoder().decode(MonitorReport.self, from: Data(json.utf8))
        // The RTT reservoir is working state, not part of the report.
        #expect(try ReportWriter.json(back) == json && back.pairs.first?.rttP50Ms == 1)
        #expect(report.markdown().contains("Wilson") && report.htmlSection().contains("id=\"monitor\""))
    }

    /// With --rate-interval: the rate table (first, latest with class, loss and RTT, lowest,
    /// highest, each with when it was measured), the method with its RFCs, the heap beside the
    /// resident size; a report written before schema 2 still decodes and is read by its schema.
    @Test func ratesAndHeapRenderAndOldReportsDecode() throws {
        var p = PairStability(resolver: "192.0.2.1:53", domain: "vpn.lab.test", spare: false)
        p.record(ok: true, at: 0, rttMs: 1, failure: nil)
        func sample(at: Double, rate: Double) -> RateSample {
            RateSample(at: at, capacity: RankReportTests.capacity("192.0.2.1:53", rate: rate, loss: 2))
        }
        p.record(rate: sample(at: 1.5, rate: 100))
        p.record(rate: sample(at: 31.5, rate: 40))
        p.record(rate: sample(at: 61.5, rate: 45))
        var settings = CapacitySettings()
        settings.ceiling = 150
        let report = MonitorReport(run: RankReportTests.run, scan: RankReportTests.run, intervalSeconds: 0.5, attempts: 1, timeoutMs: 500,
                                   rounds: 100, checks: 100, elapsedSeconds: 80, pairs: [p], rewrites: 1, rewriteTimes: [32],
                                   memory: [.init(checks: 100, rssKB: 38_000, anonKB: 3_100, heapInUseKB: 950, heapFreeKB: 300)],
                                   engines: ["masterdnsvpn-go"], rates: .init(intervalSeconds: 30, parallel: 2, capacity: settings))
        let json = try ReportWriter.json(report)
        let back = try JSONDecoder().decode(MonitorReport.self, from: Data(json.utf8))
        // The RTT reservoir is working state, not part of the report: compare what is written.
        #expect(try ReportWriter.json(back) == json && back.schema == "tunnelprobe.monitor/3" && back.pairs.first?.rates == p.rates)
        let md = report.markdown()
        #expect(md.contains("## Sustainable rate over time") && md.contains("RFC 2544 26.1") && md.contains("RFC 7680") && md.contains("RFC 2681"))
        #expect(md.contains("| 192.0.2.1:53 | vpn.lab.test | 3 | 100 q/s at 1.5 s | 45.0 q/s at 61.5 s | rateLimiter | 2.0 % ["), "\(md)")
        #expect(md.contains("| 40.0 q/s at 31.5 s | 100 q/s at 1.5 s |"), "\(md)")
        #expect(md.contains("never above 150 q/s"))
        #expect(md.contains("38000 kB (anon 3100 kB, heap 950 kB) after 100 checks"))
        let html = report.htmlSection()
        #expect(html.contains("Sustainable rate over time") && html.contains("45.0 q/s at 61.5 s"))

        // Schema 1: no rates, no heap figures.
        let old = MonitorReport(run: RankReportTests.run, scan: RankReportTests.run, intervalSeconds: 60, attempts: 2, timeoutMs: 2000,
                                rounds: 1, checks: 1, elapsedSeconds: 1, pairs: [PairStability(resolver: "192.0.2.1:53", domain: "vpn.lab.test", spare: false)],
                                rewrites: 0, rewriteTimes: [], memory: [.init(checks: 1, rssKB: 1000)], engines: ["masterdnsvpn-go"])
        let v1 = try ReportWriter.json(old).replacingOccurrences(of: "tunnelprobe.monitor/3", with: "tunnelprobe.monitor/1")
        #expect(!v1.contains("rates") && !v1.contains("heapInUseKB"))
        let decoded = try JSONDecoder().decode(MonitorReport.self, from: Data(v1.utf8))
        #expect(decoded.pairs.first?.rates == nil && decoded.rates == nil && !decoded.markdown().contains("Sustainable rate"))
        #expect(ReportKind.monitor.readableSchemas.contains("tunnelprobe.monitor/1") && ReportKind.monitor.schema == MonitorReport.schemaName)
    }
}
