import Foundation
@testable import Reports
import Testing

/// The runs index is built from each run's summary.json: writing it never decodes an earlier run's reports.
@Suite struct RunIndexTests {
    /// A run directory rendered as a command renders it: trace.json, index.html, trace.md, summary.json.
    static func renderedRun(_ root: String, _ name: String) throws -> String {
        let dir = (root as NSString).appendingPathComponent(name)
        try ReportWriter.write([("trace.json", try ReportWriter.json(RunPageTests.traceSample()))], to: dir)
        try RunDirectory.load(dir).render()
        return dir
    }

    @Test func renderWritesTheSummaryAndLoadSkipsIt() throws {
        let root = try HTMLReportTests.tempDirectory("summary")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let dir = try Self.renderedRun(root, "20261121-000000-trace-1")
        let summary = try #require(RunSummary.read(directory: dir, decoder: JSONDecoder()))
        #expect(summary.kinds == ["trace"])
        #expect(summary.status == .ok)
        #expect(summary.headline == "4000 queries, 3890 answered, 110 lost")
        #expect(summary.startedAt == "2026-11-21T00:00:00Z")
        let again = try RunDirectory.load(dir)
        #expect(again.problems.isEmpty, "\(again.problems)")
        #expect(again.reports.count == 1)
    }

    /// An earlier run whose trace.json is now corrupt (and megabytes long) still shows its summary's line:
    /// the index did not read the report. Without summaries this row is "1 problem(s)" with no headline.
    @Test func indexReadsSummariesNotReports() throws {
        let root = try HTMLReportTests.tempDirectory("index")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let dir = try Self.renderedRun(root, "20261121-000000-trace-1")
        let garbage = String(repeating: "{\"schema\": \"tunnelprobe.trace/2\", [[[", count: 100_000)
        try garbage.write(toFile: dir + "/trace.json", atomically: true, encoding: .utf8)
        let page = RunIndex.html(root: root)
        #expect(page.contains("4000 queries, 3890 answered, 110 lost"))
        #expect(page.contains("badge ok"))
        #expect(!page.contains("problem(s)"))
    }

    /// Runs written before summaries: the newest few are loaded once and summarised beside them, the rest
    /// are listed from their names until a later write reaches them.
    @Test func legacyRunsAreSummarisedAFewAtATime() throws {
        let root = try HTMLReportTests.tempDirectory("legacy")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let count = RunIndex.legacyLoadsPerWrite + 2
        let names = (0..<count).map { "20261121-00000\($0)-trace-\($0)" }
        for name in names {
            try ReportWriter.write([("trace.json", try ReportWriter.json(RunPageTests.traceSample()))],
                                   to: (root as NSString).appendingPathComponent(name))
        }
        try FileManager.default.createDirectory(atPath: root + "/000-notes", withIntermediateDirectories: true)
        func summarised() -> [String] {
            names.filter { FileManager.default.fileExists(atPath: "\(root)/\($0)/\(RunSummary.fileName)") }
        }
        let first = RunIndex.html(root: root)
        // Newest first: the two oldest wait for the next write.
        #expect(summarised() == Array(names.suffix(RunIndex.legacyLoadsPerWrite)))
        #expect(first.components(separatedBy: "4000 queries, 3890 answered, 110 lost").count - 1 == RunIndex.legacyLoadsPerWrite)
        #expect(first.components(separatedBy: "not summarised").count - 1 == 2)
        #expect(first.contains("2026-11-21T00:00:01Z"))
        #expect(!first.contains("000-notes"))
        let second = RunIndex.html(root: root)
        #expect(summarised() == names)
        #expect(second.components(separatedBy: "4000 queries, 3890 answered, 110 lost").count - 1 == count)
        #expect(!second.contains("not summarised"))
        // Nothing is written into a directory that holds no run.
        #expect(!FileManager.default.fileExists(atPath: "\(root)/000-notes/\(RunSummary.fileName)"))
    }

    /// A hostile summary (deep nesting, too long, wrong schema) is no summary: the run is loaded instead.
    @Test func hostileSummariesAreRefused() throws {
        let root = try HTMLReportTests.tempDirectory("hostile")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let dir = try Self.renderedRun(root, "20261121-000000-trace-1")
        for text in [String(repeating: "[", count: RunSummary.maxBytes), String(repeating: " ", count: RunSummary.maxBytes + 1) + "{}",
                     "{\"schema\": \"tunnelprobe.trace/2\"}"] {
            try text.write(toFile: dir + "/" + RunSummary.fileName, atomically: true, encoding: .utf8)
            #expect(RunSummary.read(directory: dir, decoder: JSONDecoder()) == nil)
        }
    }

    /// index.cache keeps the rows: an unchanged summary is not read again (here overwritten in place with
    /// its inode, size and time kept, the old line stays), a changed one is, a removed run leaves, and a
    /// garbage cache is ignored.
    @Test func cachedRowsFollowTheirSummaries() throws {
        let root = try HTMLReportTests.tempDirectory("cache")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let a = try Self.renderedRun(root, "20261121-000000-trace-1")
        let b = try Self.renderedRun(root, "20261121-000001-trace-2")
        let first = RunIndex.html(root: root)
        #expect(FileManager.default.fileExists(atPath: root + "/" + RunIndexCache.fileName))
        let path = a + "/" + RunSummary.fileName
        var before = stat()
        #expect(stat(path, &before) == 0)
        let original = try String(contentsOfFile: path, encoding: .utf8)
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.write(contentsOf: Data(original.replacingOccurrences(of: "4000 queries", with: "4001 queries").utf8))
        try handle.close()
        var times = [before.st_atim, before.st_mtim]
        #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
        #expect(RunIndex.html(root: root) == first)
        // Rendered again (a new summary file): read again.
        var run = try RunDirectory.load(b)
        run.reports[0].headline = "changed"
        try run.render()
        let second = RunIndex.html(root: root)
        #expect(second.contains("changed"))
        try FileManager.default.removeItem(atPath: b)
        #expect(!RunIndex.html(root: root).contains("trace-2"))
        try "garbage\tline\n\u{0}\t\t\n".write(toFile: root + "/" + RunIndexCache.fileName, atomically: true, encoding: .utf8)
        let rebuilt = RunIndex.html(root: root)
        #expect(rebuilt.contains("4001 queries"))
        #expect(!rebuilt.contains("garbage"))
    }

    @Test func pendingRowsComeFromRunIDsOnly() {
        guard case .pending(let started, let kind)? = RunIndex.pendingRow(name: "20261121-184800-lab-demo-3f9a") else {
            Issue.record("a run id gives a row")
            return
        }
        #expect(started == "2026-11-21T18:48:00Z")
        #expect(kind == "lab-demo")
        #expect(RunIndex.pendingRow(name: "notes") == nil)
        #expect(RunIndex.pendingRow(name: "2026112x-184800-scan-1") == nil)
        #expect(RunIndex.pendingRow(name: "20261121-184800-scan") == nil)
    }
}
