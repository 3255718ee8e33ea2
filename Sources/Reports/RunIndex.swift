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
    /// A summary is a few hundred bytes; anything far larger is not one.
    static let limits = JSONLimits(maxBytes: 64 << 10, maxDepth: 8)

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
        guard let bytes = SystemCall.readFile((directory as NSString).appendingPathComponent(fileName), limit: limits.maxBytes + 1),
              (try? limits.check(bytes)) != nil,
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
        var legacyLoads = legacyLoadsPerWrite
        var rows: [[String]] = []
        for name in names {
            let dir = (root as NSString).appendingPathComponent(name)
            guard let row = row(dir, name: name, decoder: decoder, legacyLoads: &legacyLoads) else { continue }
            let link = "<a href=\"\(HTML.escape(name))/index.html\">\(HTML.escape(name))</a>"
            switch row {
            case .summary(let s):
                let status = switch s.status {
                case .ok: HTML.badge("ok", .ok)
                case .check: HTML.badge("check", .warn)
                case .problems: HTML.badge("\(s.problems) problem(s)", .bad)
                }
                rows.append([link, HTML.escape(s.startedAt), HTML.escape(s.vantage), HTML.escape(s.kinds.joined(separator: ", ")),
                             status, HTML.escape(s.headline)])
            case .pending(let startedAt, let kind):
                rows.append([link, HTML.escape(startedAt), "", HTML.escape(kind), HTML.badge("not summarised", .neutral),
                             "written by an earlier version; a later run (or <code>tunnelprobe report render</code>) summarises it"])
            }
        }
        let body = "<h1>tunnelprobe runs</h1>"
            + (rows.isEmpty ? "<p>No runs yet.</p>" : HTML.table(["run", "started", "vantage", "reports", "status", "headline"], rows))
        return HTML.page(title: "tunnelprobe runs", body: body)
    }

    /// The row for one entry of the root, nil when it is not a run directory.
    static func row(_ dir: String, name: String, decoder: JSONDecoder, legacyLoads: inout Int) -> Row? {
        if let summary = RunSummary.read(directory: dir, decoder: decoder) { return summary.isRun ? .summary(summary) : nil }
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: dir, isDirectory: &isDir), isDir.boolValue else { return nil }
        if legacyLoads > 0 {
            legacyLoads -= 1
            guard let run = try? RunDirectory.load(dir) else { return nil }
            let summary = run.summary
            guard summary.isRun else { return nil }  // nothing is written into a directory that holds no run
            // Best effort: a directory we may not write into is summarised again by a later write.
            try? ReportWriter.write([(RunSummary.fileName, summary.json())], to: dir)
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
        try ReportWriter.write([("index.html", html(root: root))], to: root)
    }
}
