import Base
import OSLayer
import Foundation

/// `summary.json`: the one line the runs index shows for a run directory, written once when the run's
/// page is rendered. The index reads these few hundred bytes instead of decoding every report of every
/// earlier run, so a run's cost does not grow with the history before it (a sweep's scan.json alone is
/// megabytes).
public struct RunSummary: Codable, Sendable, Hashable {
    public static let schemaName = "tunnelprobe.summary/1"
    public static let fileName = "summary.json"
    /// A summary is a few hundred bytes; anything larger is not one. Read with this bound and no
    /// `JSONLimits` pass (a quarter of the index's time for 1,000 runs): Foundation's decoder refuses
    /// nesting deeper than 512 levels by itself, and 16 KiB of brackets is a fast refusal.
    static let maxBytes = 16 << 10

    public enum Status: String, Codable, Sendable, Hashable {
        /// Every report read and none records a failed check.
        case ok
        /// Every report read; at least one records a failed check or an empty result.
        case check
        /// Something could not be read (`problems` says how many things).
        case problems
    }

    public var schema: String = RunSummary.schemaName
    public var id: String
    public var startedAt: String
    public var vantage: String
    /// The report kinds that decoded, in page order (strings, so a later version's kinds still read).
    public var kinds: [String]
    /// Each report's headline, joined with "; ".
    public var headline: String
    public var status: Status
    public var problems: Int
    /// The manifest's stage count, nil without a manifest.
    public var stages: Int?

    public init(id: String, startedAt: String, vantage: String, kinds: [String], headline: String, status: Status,
                problems: Int, stages: Int?) {
        self.id = id
        self.startedAt = startedAt
        self.vantage = vantage
        self.kinds = kinds
        self.headline = headline
        self.status = status
        self.problems = problems
        self.stages = stages
    }

    /// Whether the index lists the run: it holds a report or a manifest (the rule the index always had).
    var isRun: Bool { !kinds.isEmpty || stages != nil }

    func json() -> String {
        (try? ReportWriter.json(self)) ?? "{}\n"
    }

    /// The summary in `directory`, or nil when there is none, it is not one, or it is too large.
    static func read(directory: String, decoder: JSONDecoder) -> RunSummary? {
        guard let bytes = SystemCall.readFile((directory as NSString).appendingPathComponent(fileName), limit: maxBytes + 1),
              bytes.count <= maxBytes,
              let summary = try? decoder.decode(RunSummary.self, from: Data(bytes)),
              summary.schema == schemaName else { return nil }
        return summary
    }
}

extension RunDirectory {
    /// What the runs index shows for this directory.
    public var summary: RunSummary {
        let info = manifest?.run ?? reports.first?.run
        let status: RunSummary.Status = problems.isEmpty ? (reports.allSatisfy(\.ok) ? .ok : .check) : .problems
        return RunSummary(id: runID, startedAt: info?.startedAt ?? "", vantage: info?.vantage ?? "",
                          kinds: reports.map(\.kind.rawValue), headline: reports.map(\.headline).joined(separator: "; "),
                          status: status, problems: problems.count, stages: manifest.map { $0.stages.count })
    }
}

/// `reports/index.html`: every run directory under a reports root, newest first, each from its
/// `summary.json`.
///
/// A directory without a summary (written by a version before summaries, or whose summary is unreadable)
/// is loaded in full and its summary written beside it, for at most `legacyLoadsPerWrite` directories per
/// write, newest first: the history is summarised once, a few runs at a time, and no run pays for all of
/// it. The rest are listed with what their name gives (time and kind) until a later write reaches them.
///
/// The rows themselves are kept in `index.cache` beside the page (`RunIndexCache`), keyed by each
/// summary's identity: a write stats every summary and reads only the new or changed ones.
public enum RunIndex {
    public static let legacyLoadsPerWrite = 4

    enum Row {
        case summary(RunSummary)
        /// Not summarised yet: the time and kind from a `yyyyMMdd-HHmmss-<kind>-<suffix>` name.
        case pending(startedAt: String, kind: String)
    }

    public static func html(root: String) -> String {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).sorted(by: >)
        let decoder = JSONDecoder()
        let cached = RunIndexCache.read(root: root)
        var cache = RunIndexCache()
        var legacyLoads = legacyLoadsPerWrite
        var rows: [[String]] = []
        for name in names where name != RunIndexCache.fileName && name != "index.html" {
            let dir = (root as NSString).appendingPathComponent(name)
            let stamp = RunIndexCache.stamp((dir as NSString).appendingPathComponent(RunSummary.fileName))
            if let stamp, let hit = cached.entries[name], hit.stamp == stamp {
                cache.entries[name] = hit
                if !hit.cells.isEmpty { rows.append(hit.cells) }
                continue
            }
            let row = stamp == nil && !isDirectory(dir) ? nil : row(dir, name: name, decoder: decoder, legacyLoads: &legacyLoads)
            let cells = row.map { rowCells($0, name: name) } ?? []
            // Only rows read from a summary are kept (a pending row is looked at again), and only names
            // that fit the cache's lines.
            var fromSummary = true
            if case .pending? = row { fromSummary = false }
            if let stamp, fromSummary, RunIndexCache.fits(name) { cache.entries[name] = (stamp, cells) }
            if !cells.isEmpty { rows.append(cells) }
        }
        cache.write(root: root, names: names, unchanged: cached)
        let body = "<h1>tunnelprobe runs</h1>"
            + (rows.isEmpty ? "<p>No runs yet.</p>" : HTML.table(["run", "started", "vantage", "reports", "status", "headline"], rows))
        return HTML.page(title: "tunnelprobe runs", body: body)
    }

    /// A row's cells, as HTML without tabs or line breaks (so the cache can hold them one per line).
    static func rowCells(_ row: Row, name: String) -> [String] {
        func text(_ s: String) -> String { HTML.escape(RunIndexCache.oneLine(s)) }
        let link = "<a href=\"\(HTML.escape(name))/index.html\">\(text(name))</a>"
        switch row {
        case .summary(let s):
            let status = switch s.status {
            case .ok: HTML.badge("ok", .ok)
            case .check: HTML.badge("check", .warn)
            case .problems: HTML.badge("\(s.problems) problem(s)", .bad)
            }
            return [link, text(s.startedAt), text(s.vantage), text(s.kinds.joined(separator: ", ")), status, text(s.headline)]
        case .pending(let startedAt, let kind):
            return [link, text(startedAt), "", text(kind), HTML.badge("not summarised", .neutral),
                    "written by an earlier version; a later run (or <code>tunnelprobe report render</code>) summarises it"]
        }
    }

    static func isDirectory(_ path: String) -> Bool {
        var isDir: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDir) && isDir.boolValue
    }

    /// The row for one entry of the root, nil when it is not a run directory.
    static func row(_ dir: String, name: String, decoder: JSONDecoder, legacyLoads: inout Int) -> Row? {
        if let summary = RunSummary.read(directory: dir, decoder: decoder) { return summary.isRun ? .summary(summary) : nil }
        guard isDirectory(dir) else { return nil }
        if legacyLoads > 0 {
            legacyLoads -= 1
            guard let run = try? RunDirectory.load(dir) else { return nil }
            let summary = run.summary
            guard summary.isRun else { return nil }  // nothing is written into a directory that holds no run
            // Best effort: a directory we may not write into is summarised again by a later write.
            try? ReportWriter.write([(RunSummary.fileName, summary.json())], to: dir, durable: false)
            return .summary(summary)
        }
        return pendingRow(name: name)
    }

    /// The time and kind a run id gives (`ReportWriter.runID`), nil for any other name.
    static func pendingRow(name: String) -> Row? {
        let parts = name.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count >= 4, parts[0].count == 8, parts[1].count == 6,
              parts[0].allSatisfy(\.isASCII), parts[0].allSatisfy(\.isNumber),
              parts[1].allSatisfy(\.isASCII), parts[1].allSatisfy(\.isNumber) else { return nil }
        let d = Array(parts[0]), t = Array(parts[1])
        let startedAt = "\(String(d[0..<4]))-\(String(d[4..<6]))-\(String(d[6..<8]))T\(String(t[0..<2])):\(String(t[2..<4])):\(String(t[4..<6]))Z"
        return .pending(startedAt: startedAt, kind: parts[2..<(parts.count - 1)].joined(separator: "-"))
    }

    public static func write(root: String) throws(ReportWriteError) {
        try ReportWriter.write([("index.html", html(root: root))], to: root, durable: false)
    }
}

/// `index.cache` in a reports root: the runs index's rows, one line per run directory, keyed by the
/// identity of its summary.json (inode, size, modification time). The index then stats each summary
/// and reads only the new or changed ones: decoding 1,000 summaries cost about 30 ms, 1,000 stats a
/// few. A line is `name TAB stamp TAB cell ...` with HTML cells that hold no tab or line break; a
/// line that does not have that shape is ignored (the run is read again), so any file is a valid cache.
struct RunIndexCache {
    static let fileName = "index.cache"
    /// 1,000 runs take about 400 KB.
    static let maxBytes = 64 << 20
    static let cellCount = 6

    var entries: [String: (stamp: String, cells: [String])] = [:]

    static func read(root: String) -> RunIndexCache {
        var cache = RunIndexCache()
        guard let bytes = SystemCall.readFile((root as NSString).appendingPathComponent(fileName), limit: maxBytes + 1),
              bytes.count <= maxBytes else { return cache }
        for line in bytes.split(separator: UInt8(ascii: "\n")) {
            let fields = line.split(separator: UInt8(ascii: "\t"), omittingEmptySubsequences: false)
                .map { String(decoding: $0, as: UTF8.self) }
            // A run's line has all its cells; a directory whose summary holds no run has none.
            guard fields.count == 2 + cellCount || (fields.count == 3 && fields[2].isEmpty) else { continue }
            cache.entries[fields[0]] = (fields[1], fields.count == 3 ? [] : Array(fields[2...]))
        }
        return cache
    }

    /// Rewrites the file when a row changed, in the order of `names`. Best effort: without it the
    /// next write reads the summaries again.
    func write(root: String, names: [String], unchanged old: RunIndexCache) {
        let same = entries.count == old.entries.count
            && entries.allSatisfy { name, entry in old.entries[name].map { $0.stamp == entry.stamp } ?? false }
        guard !same else { return }
        var text = ""
        for name in names {
            guard let entry = entries[name] else { continue }
            text += ([name, entry.stamp] + (entry.cells.isEmpty ? [""] : entry.cells)).joined(separator: "\t") + "\n"
        }
        try? ReportWriter.write([(Self.fileName, text)], to: root, durable: false)
    }

    /// The identity of the file at `path` (inode, size, modification time in ns), nil when it is absent.
    static func stamp(_ path: String) -> String? {
        var st = stat()
        guard stat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return nil }
        return "\(st.st_ino).\(st.st_size).\(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec)"
    }

    static func fits(_ name: String) -> Bool {
        !name.contains { $0 == "\t" || $0.isNewline }
    }

    /// Text for a cell: tabs and line breaks become spaces.
    static func oneLine(_ s: String) -> String {
        fits(s) ? s : String(s.map { $0 == "\t" || $0.isNewline ? " " : $0 })
    }
}
