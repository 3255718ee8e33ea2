import PathMetrics
import ProbeClient
import Foundation
import Reports
import Testing
import TestSupport
import Results

@Suite struct HTMLReportTests {
    static func tempDirectory(_ name: String) throws -> String {
        let dir = NSTemporaryDirectory() + "tp-html-\(name)-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    static func writeScan(_ report: ScanReport, to dir: String) throws {
        try ReportWriter.write([("scan.json", try ReportWriter.json(report))], to: dir)
    }

    @Test func scanSectionMatchesTheGoldenFile() throws {
        let golden = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden/scan-section.html")
        let rendered = ScanReportTests.sample().htmlSection()
        #expect(rendered == (try Golden.expected(rendered, file: golden)))
    }

    /// Issue 27: every chart with a label column, fed labels longer than the old fixed column held
    /// ("conservative 8+2 → 7.9+1.9" lost its start), and values and ticks wider than its margins.
    /// BrowserTests measures the same charts' text boxes in Chromium.
    static func longLabelCharts() -> [(id: String, svg: String)] {
        let levels = ["conservative 8+2 → 7.9+1.9", "balanced 12+3 → 8.2+2.4", "aggressive 16+7 → 9.1+3.9", "none 0+0 → 0.0+0.0",
                      "rq:24:12 (RaptorQ model) 24+12 → 23.7+11.9"]
        let resolvers = ["resolver-number-one.example.net:5353 vpn.lab.test", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff:53 t.example.com",
                         "198.51.100.200:53"]
        return [
            ("long-bars", SVGChart.bars(id: "long-bars", title: "Total stall time per level (all runs), with a title longer than the chart is wide, which must be shortened to fit",
                                        bars: levels.enumerated().map { .init(label: $1, value: Double($0 + 1) * 12_345_678.9, series: $0 == 1 ? 2 : 0) },
                                        unit: "ms", reference: (value: 40_000_000, label: "synced download MTU over every accepted pair"))),
            ("long-bars-resolvers", SVGChart.bars(id: "long-bars-resolvers", title: "Download MTU per pair",
                                                  bars: resolvers.map { .init(label: $0, value: 1232) }, unit: "bytes")),
            ("long-timeline", SVGChart.timeline(id: "long-timeline", title: "Phases",
                                                spans: [.init(name: "handshake through 2001:db8:ffff::53 (second attempt)", start: 0, duration: 1234.5, ok: true),
                                                        .init(name: "first data", start: 1234.5, duration: 98_765.4, ok: false)])),
            ("long-columns", SVGChart.columns(id: "long-columns", title: "Loss over time", columns: (0..<12).map { .init(label: "\($0 * 1000).0 s since start", value: Double($0) * 1.5e9) },
                                              xLabel: "seconds", yLabel: "packets")),
            ("long-scatter", SVGChart.scatter(id: "long-scatter", title: "Residual loss vs overhead",
                                              points: levels.enumerated().map { .init(label: $1, x: 1 + Double($0) * 0.25, y: Double($0) * 2.5e7) },
                                              xLabel: "bytes on the wire per useful byte", yLabel: "% lost")),
            ("long-cdf", SVGChart.cdf(id: "long-cdf", title: "RTT", series: resolvers.map { .init(name: $0, values: [1, 20, 3_000_000]) }, xLabel: "ms")),
        ]
    }

    @Test func chartsWithLongLabelsMatchTheGoldenFile() throws {
        let golden = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden/charts-long-labels.svg.html")
        let rendered = Self.longLabelCharts().map(\.svg).joined(separator: "\n") + "\n"
        #expect(rendered == (try Golden.expected(rendered, file: golden)))
        // The simulate labels of the issue are whole, not clipped at either end.
        for label in ["conservative 8+2 → 7.9+1.9", "balanced 12+3 → 8.2+2.4", "resolver-number-one.example.net:5353 vpn.lab.test"] {
            #expect(rendered.contains(">\(HTML.escape(label))</text>"), "\(label) is shortened")
        }
    }

    /// Issue 27: an edited path.json whose loss counts overflow (lostUnknown = Int.max) trapped the
    /// page's loss-over-time sum; now the chart gives way to "invalid" naming the field.
    @Test func anOutOfRangeLossCountRendersAsInvalidWithItsFieldNamed() throws {
        func timeline(_ lostUnknown: String) throws -> Results.LossTimeline {
            try JSONDecoder().decode(Results.LossTimeline.self, from: Data("""
                {"sliceMs":100,"slices":[{"startMs":0,"sent":10,"lostUp":1,"lostDown":0,"lostUnknown":0,"longestBurst":1},
                                         {"startMs":100,"sent":10,"lostUp":1,"lostDown":2,"lostUnknown":\(lostUnknown),"longestBurst":3}]}
                """.utf8))
        }
        var report = PathReportTests.sample()
        report.resolvers[0].timeline = try timeline("9223372036854775807")
        let html = report.htmlSection()
        #expect(html.contains("invalid (timeline.slices[1] sent/lostUp/lostDown/lostUnknown out of range)"))
        #expect(!html.contains("id=\"path-loss-time\"><title>"))
        report.resolvers[0].timeline = try timeline("1")
        #expect(report.htmlSection().contains("<svg class=\"chart\" id=\"path-loss-time\""))
    }

    @Test func pagesAreSelfContained() throws {
        let dir = try Self.tempDirectory("self")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.writeScan(ScanReportTests.sample(), to: dir)
        let page = try RunDirectory.load(dir).indexHTML()
        #expect(!page.contains("<script"))
        #expect(!page.contains("http://") || !page.replacingOccurrences(of: "http://www.w3.org/2000/svg", with: "").contains("http://"))
        #expect(!page.contains("https://"))
        #expect(page.contains("name=\"viewport\""))
        for id in ["scan-mtu-download", "scan-mtu-upload", "scan-rtt-cdf"] { #expect(page.contains("id=\"\(id)\"")) }
    }

    @Test func textIsEscaped() {
        #expect(HTML.escape("<a href=\"x\">&'") == "&lt;a href=&quot;x&quot;&gt;&amp;&#39;")
        var r = ScanReportTests.sample()
        r.settings.domains = ["<script>alert(1)</script>"]
        #expect(!r.htmlSection().contains("<script>"))
    }

    @Test func missingAndCorruptFilesAreNamedAndTheRestRenders() throws {
        let dir = try Self.tempDirectory("broken")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let sample = ScanReportTests.sample()
        try Self.writeScan(sample, to: dir)
        let manifest = RunManifest(run: sample.run, stages: [
            .init(kind: .scan, file: "scan.json", status: "ok", seconds: 1.2),
            .init(kind: .trace, file: "trace.json", status: "error", note: "exit 69"),
        ])
        try ReportWriter.write([
            ("manifest.json", try ReportWriter.json(manifest)),
            ("path.json", "{\"schema\": \"tunnelprobe.path/1\", \"run\": "),
            ("notes.json", "[1, 2]"),
            ("scan-old.json", "{\"schema\": \"tunnelprobe.scan/1\"}"),
        ], to: dir)
        let run = try RunDirectory.load(dir)
        #expect(run.reports.count == 1)
        #expect(run.problems.contains { $0.hasPrefix("trace.json: missing") && $0.contains("exit 69") })
        #expect(run.problems.contains { $0.hasPrefix("path.json: not valid JSON") })
        #expect(run.problems.contains { $0.hasPrefix("scan-old.json: does not decode as tunnelprobe.scan/1 (missing \"run\"") })
        #expect(run.problems.contains { $0.hasPrefix("notes.json: not a tunnelprobe report") })
        try run.render()
        let page = try String(contentsOfFile: dir + "/index.html", encoding: .utf8)
        #expect(page.contains("Not everything could be shown"))
        #expect(page.contains("trace.json: missing"))
        #expect(page.contains("id=\"scan-mtu-download\""))
        #expect(FileManager.default.fileExists(atPath: dir + "/scan.md"))
    }

    @Test func compareNamesGainedLostAndShiftedPairs() throws {
        let a = ScanReportTests.sample()
        var b = a
        b.run.id = "20261128-000000-scan-2"
        b.pairs[0].download?.bytes = 700
        b.pairs[1] = ScanPair(resolver: "203.0.113.9:53", domain: "vpn.lab.test", accepted: true,
                              upload: .init(bytes: 100, qnameChars: 200, payloadChars: 160, encoding: "base32", limitedBy: nil, caseChanged: false),
                              download: .init(bytes: 500, responseSize: 700, recordType: "TXT", limitedBy: .resolverLimit), rttMs: 3, queries: 20)
        b.synced = .init(upload: 100, download: 500, uploadQnameChars: 200, downloadResponseSize: 700)
        b.summary.accepted = 2
        let da = try Self.tempDirectory("a"), db = try Self.tempDirectory("b")
        defer { for d in [da, db] { try? FileManager.default.removeItem(atPath: d) } }
        try Self.writeScan(a, to: da)
        try Self.writeScan(b, to: db)
        let c = ReportComparison.compare(try RunDirectory.load(da), try RunDirectory.load(db))
        #expect(c.scan?.gained == ["203.0.113.9:53 vpn.lab.test"])
        #expect(c.scan?.lost == [])
        #expect(c.scan?.mtuShifts.first?.downloadA == 900 && c.scan?.mtuShifts.first?.downloadB == 700)
        #expect(c.changes.contains("scan: accepted pairs 1 → 2"))
        #expect(c.markdown().contains("gained 203.0.113.9:53 vpn.lab.test"))
        let same = ReportComparison.compare(try RunDirectory.load(da), try RunDirectory.load(da))
        #expect(same.changes.isEmpty)
    }

    @Test func mergeKeepsEveryVantagePoint() throws {
        var tehran = ScanReportTests.sample()
        tehran.run.vantage = "tehran"
        var mashhad = ScanReportTests.sample()
        mashhad.run.vantage = "mashhad"
        mashhad.pairs[0].download?.bytes = 600
        let run = RunInfo(id: "m", version: "0", commandLine: [], vantage: "tehran, mashhad", seed: 1, startedAt: "now")
        let merged = try ScanReport.merged([tehran, mashhad], run: run)
        #expect(merged.pairs.count == 4)
        #expect(Set(merged.pairs.compactMap(\.vantage)) == ["tehran", "mashhad"])
        #expect(merged.synced.download == 600)
        #expect(merged.mergedFrom?.map(\.vantage) == ["tehran", "mashhad"])
        #expect(merged.htmlSection().contains("mashhad"))
        #expect(throws: ScanReport.MergeError.self) { try ScanReport.merged([tehran], run: run) }
    }

    @Test func axisTicksAreRound() {
        let page = SVGChart.bars(id: "t", title: "t", bars: [.init(label: "a", value: 1232)], unit: "bytes")
        #expect(page.contains(">1500<"))
        #expect(page.contains(">500<"))
    }
}
