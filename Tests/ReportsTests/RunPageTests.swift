import TraceAnalysis
import Foundation
import Reports
import Testing
import TunnelVerify
import TestSupport
import Results

/// A run directory holding every kind of report, as `lab demo` writes it: the index page shows each
/// stage with its charts, and the golden file pins the rendering.
@Suite struct RunPageTests {
    static func traceSample() -> TraceReport {
        let stats = TraceStats(resolver: "198.18.0.53:53", queries: 4000, retransmissions: 0, answered: 3890, lost: 110, late: 2,
                               neverAnswered: 108, duplicates: 12, unmatchedResponses: 0, reordered: 9, reorderedRatio: 0.0023,
                               lossRatio: 0.0275, lossWilson95: [0.0228, 0.0331],
                               rttMs: .init(samples: 3890, min: 0.2, p50: 0.6, p90: 1.1, p99: 3.2, max: 12),
                               truncated: 0, rcodes: ["NOERROR": 3902], querySizes: [.init(fromBytes: 64, toBytes: 128, count: 4000)],
                               responseSizes: [.init(fromBytes: 256, toBytes: 512, count: 3902)])
        return TraceReport(
            TraceResult(
                settings: .init(tmaxMs: 2000, lateWindowMs: 60000, filter: nil, dnsPorts: [53], encodedLabelMin: 16),
                files: [.init(path: "path.pcap", format: "pcap", linkType: "LINUX_SLL2", records: 7904)],
                packets: .init(total: 7904, decoded: 7904, undecoded: [:], dns: 7904, notDNS: 0, tcpSegmentsSkipped: 0),
                totals: stats, resolvers: [stats], domains: [.init(domain: "vpn.lab.test", queries: 4000, kind: "txt-tunnel")]),
            run: RunInfo(id: "20261121-000000-trace-1", version: "0.1.0", commandLine: ["tunnelprobe", "trace"], vantage: "lab",
                         seed: 0, startedAt: "2026-11-21T00:00:00Z"))
    }

    static func writeAll(to dir: String) throws {
        try ReportWriter.write([
            ("scan.json", try ReportWriter.json(ScanReportTests.sample())),
            ("path.json", try ReportWriter.json(PathReportTests.sample())),
            ("trace.json", try ReportWriter.json(traceSample())),
            ("simulate.json", try ReportWriter.json(SimulateReportTests.sample())),
            ("verify.json", try ReportWriter.json(VerifyMarkdownTests.sample())),
        ], to: dir)
    }

    static let chartIDs = ["scan-mtu-download", "scan-mtu-upload", "scan-rtt-cdf", "path-rtt-cdf", "path-reorder-extent",
                           "trace-loss", "simulate-loss-overhead", "simulate-delay-p99", "verify-phases", "verify-evidence"]

    @Test func everyStageAndChartIsOnTheIndexPage() throws {
        let dir = try HTMLReportTests.tempDirectory("all")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.writeAll(to: dir)
        let run = try RunDirectory.load(dir)
        #expect(run.problems.isEmpty, "\(run.problems)")
        #expect(run.reports.map(\.kind) == [.scan, .path, .trace, .simulate, .verify])
        let page = run.indexHTML()
        for id in Self.chartIDs { #expect(page.contains("id=\"\(id)\""), "\(id) missing") }
        for section in ["scan", "path", "trace", "simulate", "verify"] { #expect(page.contains("<section id=\"\(section)\">")) }
        #expect(!page.contains("<script"))
    }

    @Test func sectionsMatchTheGoldenFiles() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden")
        let rendered = [
            ("path-section.html", PathReportTests.sample().htmlSection()),
            ("trace-section.html", Self.traceSample().htmlSection()),
            ("simulate-section.html", SimulateReportTests.sample().htmlSection()),
            ("verify-section.html", VerifyMarkdownTests.sample().htmlSection()),
        ]
        for (name, text) in rendered {
            let url = folder.appendingPathComponent(name)
            #expect(text == (try Golden.expected(text, file: url)), "\(name) differs from its golden file")
        }
    }

    @Test func compareNamesAVerdictChange() throws {
        let da = try HTMLReportTests.tempDirectory("va"), db = try HTMLReportTests.tempDirectory("vb")
        defer { for d in [da, db] { try? FileManager.default.removeItem(atPath: d) } }
        var pass = VerifyMarkdownTests.sample()
        pass.verdict = .pass
        var failed = pass
        failed.verdict = .fail
        failed.failure = .init(phase: "handshake", reason: "bad password", engineWords: ["BADPASS"])
        try ReportWriter.write([("verify.json", try ReportWriter.json(pass))], to: da)
        try ReportWriter.write([("verify.json", try ReportWriter.json(failed))], to: db)
        let c = ReportComparison.compare(try RunDirectory.load(da), try RunDirectory.load(db))
        #expect(c.changes.contains { $0.hasPrefix("verify:") && $0.contains("pass → ") && $0.contains("fail") })
    }
}

@Suite struct PathComparisonTests {
    /// Two path runs whose upstream loss intervals do not overlap: compare names the shift; the same
    /// run twice names nothing.
    @Test func aLossShiftBeyondTheIntervalsIsNamed() throws {
        let a = PathReportTests.sample()
        var b = a
        let before = try #require(a.resolvers.first?.loss.up)
        var shifted = before
        shifted.count = before.samples / 2
        shifted.ratio = 0.5
        shifted.ciLow = 0.45
        shifted.ciHigh = 0.55
        b.resolvers[0].loss.up = shifted
        let da = try HTMLReportTests.tempDirectory("pa"), db = try HTMLReportTests.tempDirectory("pb")
        defer { for d in [da, db] { try? FileManager.default.removeItem(atPath: d) } }
        try ReportWriter.write([("path.json", try ReportWriter.json(a))], to: da)
        try ReportWriter.write([("path.json", try ReportWriter.json(b))], to: db)
        let c = ReportComparison.compare(try RunDirectory.load(da), try RunDirectory.load(db))
        #expect(c.changes.contains { $0.hasPrefix("path: \(a.resolvers[0].resolver) loss up") && $0.contains("→ 50.00 %") }, "\(c.changes)")
        #expect(ReportComparison.compare(try RunDirectory.load(da), try RunDirectory.load(da)).changes.isEmpty)
    }
}
