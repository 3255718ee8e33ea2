import Foundation
import Reports
import Testing
import Results

/// `scan --e2e` in the scan report: ranked by goodput, failures after with the engine's own words,
/// in JSON, Markdown and HTML; a report without it is unchanged.
@Suite struct ScanEndToEndTests {
    static func run(_ resolver: String, goodput: Double?, ok: Bool = true, words: [String] = []) -> ScanEndToEnd.Run {
        var run = ScanEndToEnd.Run(resolver: resolver, domain: "vpn.lab.test", error: "placeholder")
        run.ok = ok
        run.verdict = ok ? "pass" : "fail"
        run.reason = ok ? nil : "failed at handshake: handshake started but the session was never set up"
        run.failedPhase = ok ? nil : "handshake"
        run.engineWords = words
        run.goodputBytesPerSecond = goodput
        run.handshakeMs = ok ? 190 : nil
        run.bulkBytes = goodput == nil ? nil : 65_536
        return run
    }

    static func section() -> ScanEndToEnd {
        ScanEndToEnd(engine: "iodine", requested: 10, selection: "usable pairs by download bytes", firstDataURL: "http://198.18.2.2:80/",
                     bulkURL: "http://198.18.2.2:80/bulk", bulkBytes: 65_536, deadlineMs: 25_000,
                     runs: [run("198.51.100.1:53", goodput: 1000),
                            run("198.51.100.2:53", goodput: nil, ok: false, words: ["Version ok, both using protocol v 0x00000502. You are user #0"]),
                            run("198.51.100.3:53", goodput: 5000),
                            run("198.51.100.4:53", goodput: 3000)])
    }

    @Test func passingRunsAreRankedByGoodputAndFailuresFollow() {
        let runs = Self.section().runs
        #expect(runs.map(\.resolver) == ["198.51.100.3:53", "198.51.100.4:53", "198.51.100.1:53", "198.51.100.2:53"])
        #expect(runs.map(\.rank) == [1, 2, 3, nil])
    }

    @Test func markdownAndHTMLShowTheFailureInTheEnginesWords() {
        var report = ScanReportTests.sample()
        report.endToEnd = Self.section()
        let markdown = report.markdown()
        #expect(markdown.contains("## End to end through iodine"))
        #expect(markdown.contains("| 1 | 198.51.100.3:53 | vpn.lab.test | ok |"))
        #expect(markdown.contains("**failed** at handshake"))
        #expect(markdown.contains("You are user #0"))
        #expect(markdown.contains("RFC 2647 3.17"))
        let html = report.htmlSection()
        #expect(html.contains("scan-e2e-goodput"))
        #expect(html.contains("failed at handshake"))
        #expect(html.contains("You are user #0"))
        #expect(!ScanReportTests.sample().markdown().contains("End to end"))
    }

    @Test func jsonRoundTripsAndOldReportsHaveNoSection() throws {
        var report = ScanReportTests.sample()
        #expect(!(try ReportWriter.json(report)).contains("endToEnd"))
        report.endToEnd = Self.section()
        let text = try ReportWriter.json(report)
        let decoded = try JSONDecoder().decode(ScanReport.self, from: Data(text.utf8))
        #expect(decoded == report)
        #expect(decoded.endToEnd?.runs.first?.goodputBytesPerSecond == 5000)
    }
}
