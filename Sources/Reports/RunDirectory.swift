import Base
import OSLayer
public import Results
import Foundation

/// The report kinds a run directory can hold, each `<kind>.json` with schema `tunnelprobe.<kind>/<n>`.
public enum ReportKind: String, CaseIterable, Codable, Sendable {
    case scan, path, trace, simulate, verify, resilience, rank, monitor

    public var fileName: String { rawValue + ".json" }
    /// The schema this version writes.
    public var schema: String {
        switch self {
        case .trace: TraceResult.schemaName
        case .path: PathReport.schemaName
        case .rank: RankReport.schemaName
        case .simulate: SimulateReport.schemaName
        case .resilience: ResilienceResult.schemaName
        case .monitor: MonitorReport.schemaName
        default: "tunnelprobe.\(rawValue)/1"
        }
    }
    /// The schemas it reads: the current one and earlier ones whose files still decode (trace/1 lacks
    /// only optional fields; simulate/1 decodes as /2, whose new fields are optional, and differs only
    /// in the recommendation rule; resilience/1 lacks only the optional `bridge` fields; monitor/1
    /// decodes as /2, which adds the optional rate measurements and heap figures). trace/3,
    /// simulate/3, path/2, rank/2 and monitor/3 write every percentile figure nobody measured as null
    /// and the rate steps' RTTs and losses as the shared `Percentiles` and `Proportion`, whose decoders
    /// read the earlier forms (absent figures, and `total`, `low`, `high` for a loss).
    public var readableSchemas: [String] {
        switch self {
        case .trace: [schema, "tunnelprobe.trace/2", "tunnelprobe.trace/1"]
        case .simulate: [schema, "tunnelprobe.simulate/2", "tunnelprobe.simulate/1"]
        case .resilience: [schema, "tunnelprobe.resilience/1"]
        case .monitor: [schema, "tunnelprobe.monitor/2", "tunnelprobe.monitor/1"]
        case .path: [schema, "tunnelprobe.path/1"]
        case .rank: [schema, "tunnelprobe.rank/1"]
        default: [schema]
        }
    }
    public var title: String {
        switch self {
        case .scan: "Resolver scan"
        case .path: "Path quality"
        case .trace: "Capture analysis"
        case .simulate: "FEC + ARQ simulation"
        case .verify: "Tunnel verification"
        case .resilience: "Tunnel resilience"
        case .rank: "Resolver capacity and ranking"
        case .monitor: "Resolver stability"
        }
    }
}

/// `manifest.json`: what a multi-stage run (the lab demo) meant to produce, so a page can say what is
/// missing rather than silently showing less.
public struct RunManifest: Codable, Sendable, Hashable {
    public static let schemaName = "tunnelprobe.run/1"
    public var schema: String = RunManifest.schemaName
    public var run: RunInfo
    public var stages: [Stage]

    public struct Stage: Codable, Sendable, Hashable {
        public var kind: ReportKind
        /// The JSON file the stage writes, relative to the run directory.
        public var file: String
        /// ok, failed (ran and failed: the report explains), error (did not produce its report), skipped.
        public var status: String
        /// One line: the exit status or why the stage was skipped.
        public var note: String?
        public var seconds: Double?
        public init(kind: ReportKind, file: String, status: String, note: String? = nil, seconds: Double? = nil) {
            self.kind = kind
            self.file = file
            self.status = status
            self.note = note
            self.seconds = seconds
        }
    }

    public init(run: RunInfo, stages: [Stage]) {
        self.run = run
        self.stages = stages
    }
}

/// A decoded report of any kind.
public enum ReportDocument: Sendable {
    case scan(ScanReport)
    case path(PathReport)
    case trace(TraceReport)
    case verify(VerifyReport)
    case simulate(SimulateReport)
    case resilience(ResilienceReport)
    case rank(RankReport)
    case monitor(MonitorReport)
}

/// One report read from a run directory, ready to render.
public struct LoadedReport: Sendable {
    public var document: ReportDocument
    public var kind: ReportKind
    public var file: String
    public var run: RunInfo
    /// The `<section>` for the run page.
    public var html: String
    public var markdown: String
    /// One line for listings, e.g. "12 of 40 pairs accepted, synced 148/900 B".
    public var headline: String
    /// False when the report itself records a failed check or an empty result.
    public var ok: Bool
}

/// A run directory as found on disk: the reports that decoded, and a line for each one that did not.
public struct RunDirectory: Sendable {
    public var path: String
    public var manifest: RunManifest?
    public var reports: [LoadedReport]
    /// "trace.json: missing (the manifest lists it)", "path.json: not valid JSON ...", in file order.
    public var problems: [String]

    /// The first scan report in the directory.
    public var scanReport: ScanReport? {
        for r in reports { if case .scan(let s) = r.document { return s } }
        return nil
    }

    public var pathReport: PathReport? {
        for r in reports { if case .path(let p) = r.document { return p } }
        return nil
    }

    public var simulateReport: SimulateReport? {
        for r in reports { if case .simulate(let v) = r.document { return v } }
        return nil
    }

    public var verifyReport: VerifyReport? {
        for r in reports { if case .verify(let v) = r.document { return v } }
        return nil
    }

    public var runID: String { manifest?.run.id ?? reports.first?.run.id ?? (path as NSString).lastPathComponent }

    /// Reads every report it can; only an unreadable directory is an error. `written`: reports the
    /// caller has just written to the directory, by file name, still in memory: they are rendered from
    /// there rather than read and decoded again (the same page, TraceCommandTests checks).
    public static func load(_ path: String, written: [String: ReportDocument] = [:]) throws(ReportWriteError) -> RunDirectory {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: path).sorted()
        } catch {
            throw ReportWriteError(path: path, reason: "cannot read the directory (\(error.localizedDescription))")
        }
        var dir = RunDirectory(path: path, manifest: nil, reports: [], problems: [])
        if names.contains("manifest.json") {
            if let bytes = SystemCall.readFile(dir.url("manifest.json").path, limit: JSONLimits.report.maxBytes + 1) {
                do {
                    try JSONLimits.report.check(bytes)
                    dir.manifest = try JSONDecoder().decode(RunManifest.self, from: Data(bytes))
                } catch {
                    dir.problems.append("manifest.json: cannot be read (\(Self.describe(error)))")
                }
            } else {
                dir.problems.append("manifest.json: cannot be read")
            }
        }
        var seen = Set<String>()
        for name in names where name.hasSuffix(".json") && name != "manifest.json" && name != RunSummary.fileName {
            seen.insert(name)
            if let document = written[name] {
                dir.reports.append(ReportRenderers.present(document, file: name))
                continue
            }
            guard let bytes = SystemCall.readFile(dir.url(name).path, limit: JSONLimits.report.maxBytes + 1) else {
                dir.problems.append("\(name): cannot be read")
                continue
            }
            do { try JSONLimits.report.check(bytes) } catch {
                dir.problems.append("\(name): refused, \(error)")
                continue
            }
            let data = Data(bytes)
            let schema: String
            switch Self.schema(of: data) {
            case .invalid(let why):
                dir.problems.append("\(name): not valid JSON, corrupt or truncated (\(why))")
                continue
            case .none:
                dir.problems.append("\(name): not a tunnelprobe report (no \"schema\")")
                continue
            case .schema(let s):
                schema = s
            }
            guard let kind = ReportKind.allCases.first(where: { $0.readableSchemas.contains(schema) }) else {
                if schema.hasPrefix("tunnelprobe.fates/") || schema.hasPrefix("tunnelprobe.compare/") || schema.hasPrefix("tunnelprobe.sweep/") { continue }
                dir.problems.append("\(name): unknown schema \(schema)")
                continue
            }
            do {
                dir.reports.append(try ReportRenderers.load(kind, data: data, file: name))
            } catch {
                dir.problems.append("\(name): does not decode as \(schema) (\(Self.describe(error)))")
            }
        }
        for stage in dir.manifest?.stages ?? [] where !seen.contains(stage.file) {
            let why = stage.note.map { ": \($0)" } ?? ""
            dir.problems.append("\(stage.file): missing (stage \(stage.kind.rawValue) \(stage.status)\(why))")
        }
        dir.reports.sort { a, b in
            (ReportKind.allCases.firstIndex(of: a.kind) ?? 0, a.file) < (ReportKind.allCases.firstIndex(of: b.kind) ?? 0, b.file)
        }
        return dir
    }

    func url(_ name: String) -> URL { URL(fileURLWithPath: (path as NSString).appendingPathComponent(name)) }

    /// `index.html`: every stage's section, problems first, links to the files beside it.
    public func indexHTML() -> String {
        var body = "<header><p class=\"muted\"><a href=\"../index.html\">all runs</a></p><h1>tunnelprobe run \(HTML.escape(runID))</h1>"
        if let run = manifest?.run ?? reports.first?.run {
            body += HTML.facts([
                ("Vantage", HTML.escape(run.vantage)),
                ("Tool", HTML.escape("\(run.tool) \(run.version)")),
                ("Started", HTML.escape(run.startedAt)),
                ("Command", "<code>\(HTML.escape(run.commandLine.joined(separator: " ")))</code>"),
                ("Seed", "\(run.seed)"),
            ])
        }
        body += "</header>"
        if !problems.isEmpty {
            body += "<div class=\"notice bad\"><b>Not everything could be shown.</b><ul>"
                + problems.map { "<li>\(HTML.escape($0))</li>" }.joined() + "</ul></div>"
        }
        if let stages = manifest?.stages, !stages.isEmpty {
            body += "<h2>Stages</h2>"
            body += HTML.table(["stage", "status", "time s", "report", "note"], stages.map { st in
                let present = reports.contains { $0.file == st.file }
                let tone: HTML.Tone = st.status == "ok" ? .ok : (st.status == "skipped" ? .neutral : .bad)
                return [HTML.escape(st.kind.title), HTML.badge(st.status, tone), HTML.number(st.seconds),
                        present ? "<a href=\"#\(st.kind.rawValue)\">section</a> · <a href=\"\(HTML.escape(st.file))\">json</a>" : "missing",
                        HTML.escape(st.note ?? "")]
            }, numeric: [2])
        }
        if reports.count > 1 {
            body += "<nav class=\"stages\">" + reports.map { "<a href=\"#\($0.kind.rawValue)\">\(HTML.escape($0.kind.title))</a>" }.joined() + "</nav>"
        }
        for r in reports {
            body += r.html
            let md = (r.file as NSString).deletingPathExtension + ".md"
            body += "<p class=\"muted\">Files: <a href=\"\(HTML.escape(r.file))\">\(HTML.escape(r.file))</a> · <a href=\"\(HTML.escape(md))\">\(HTML.escape(md))</a></p>"
        }
        if reports.isEmpty { body += "<p>No report in this directory could be read.</p>" }
        body += "<footer class=\"muted\"><p>Every figure on this page comes from the JSON reports beside it; each metric's definition is cited in them and in the Markdown files.</p></footer>"
        return HTML.page(title: "tunnelprobe \(runID)", body: body)
    }

    /// Writes `index.html`, each report's Markdown next to its JSON, and `summary.json` (the line the
    /// runs index shows, so the index never decodes this run's reports again).
    public func render() throws(ReportWriteError) {
        var files: [(String, String)] = [("index.html", indexHTML())]
        for r in reports { files.append(((r.file as NSString).deletingPathExtension + ".md", r.markdown)) }
        files.append((RunSummary.fileName, summary.json()))
        try ReportWriter.write(files, to: path, durable: false)  // rendered from the JSON beside them
    }

    enum Peek {
        case schema(String)
        case none
        case invalid(String)
    }

    static func schema(of data: Data) -> Peek {
        let object: Any
        do { object = try JSONSerialization.jsonObject(with: data) } catch {
            return .invalid(data.isEmpty ? "empty file" : "\(data.count) bytes that do not parse")
        }
        guard let schema = (object as? [String: Any])?["schema"] as? String else { return .none }
        return .schema(schema)
    }

    static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let c): "corrupt: \(c.debugDescription)"
        case DecodingError.keyNotFound(let key, let c): "missing \"\(key.stringValue)\" at \(path(c.codingPath))"
        case DecodingError.typeMismatch(_, let c): "wrong type at \(path(c.codingPath))"
        case DecodingError.valueNotFound(_, let c): "null at \(path(c.codingPath))"
        default: "\(error)"
        }
    }

    static func path(_ keys: [any CodingKey]) -> String {
        keys.isEmpty ? "top level" : keys.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
    }
}

/// How each report kind is decoded and rendered. One place to add a kind.
enum ReportRenderers {
    static func load(_ kind: ReportKind, data: Data, file: String) throws -> LoadedReport {
        present(try decode(kind, data: data), file: file)
    }

    static func decode(_ kind: ReportKind, data: Data) throws -> ReportDocument {
        let decoder = JSONDecoder()
        switch kind {
        case .scan: return .scan(try decoder.decode(ScanReport.self, from: data))
        case .path: return .path(try decoder.decode(PathReport.self, from: data))
        case .trace: return .trace(try decoder.decode(TraceReport.self, from: data))
        case .verify: return .verify(try decoder.decode(VerifyReport.self, from: data))
        case .simulate: return .simulate(try decoder.decode(SimulateReport.self, from: data))
        case .resilience: return .resilience(try decoder.decode(ResilienceReport.self, from: data))
        case .rank: return .rank(try decoder.decode(RankReport.self, from: data))
        case .monitor: return .monitor(try decoder.decode(MonitorReport.self, from: data))
        }
    }

    /// A decoded report (read from `file`, or still in memory when its command wrote it) made ready
    /// for the page.
    static func present(_ document: ReportDocument, file: String) -> LoadedReport {
        switch document {
        case .scan(let r):
            let synced = r.synced.upload.map { "synced \($0)/\(r.synced.download ?? 0) B" } ?? "nothing accepted"
            return LoadedReport(document: document, kind: .scan, file: file, run: r.run, html: r.htmlSection(), markdown: r.markdown(),
                                headline: "\(r.summary.accepted) of \(r.summary.pairs) pairs accepted, \(synced)",
                                ok: r.summary.accepted > 0)
        case .path(let r):
            let losses = r.resolvers.map { row in
                "\(row.resolver) loss up \(percent(row.loss.up.ratio)) down \(percent(row.loss.down.ratio))"
            }.joined(separator: "; ")
            return LoadedReport(document: document, kind: .path, file: file, run: r.run, html: r.htmlSection(),
                                markdown: r.markdown(), headline: losses, ok: !r.resolvers.isEmpty)
        case .trace(let r):
            return LoadedReport(document: document, kind: .trace, file: file, run: r.run, html: r.htmlSection(),
                                markdown: r.markdown(),
                                headline: "\(r.totals.queries) queries, \(r.totals.answered) answered, \(r.totals.lost) lost",
                                ok: r.files.allSatisfy { $0.error == nil })
        case .verify(let r):
            return LoadedReport(document: document, kind: .verify, file: file, run: r.run, html: r.htmlSection(),
                                markdown: r.markdown(), headline: "\(r.engine): \(r.verdict.rawValue)", ok: r.verdict == .pass)
        case .simulate(let r):
            let best = r.recommendation.map { "recommended \($0.level) (\($0.direction))" } ?? "no recommendation"
            return LoadedReport(document: document, kind: .simulate, file: file, run: r.run, html: r.htmlSection(),
                                markdown: r.markdown(), headline: "\(r.levels.count) levels, \(best)", ok: r.isal.mismatches == 0)
        case .resilience(let r):
            return LoadedReport(document: document, kind: .resilience, file: file, run: r.run, html: r.htmlSection(),
                                markdown: r.markdown(), headline: r.summaryLine, ok: r.verdict == .pass)
        case .rank(let r):
            let best = r.pairs.map(\.sustainableRate).max() ?? 0
            return LoadedReport(document: document, kind: .rank, file: file, run: r.run, html: r.htmlSection(),
                                markdown: r.markdown(),
                                headline: "\(r.pairs.count) pair(s) measured, best \(HTML.formatFixed(best, decimals: 1)) q/s sustainable",
                                ok: r.pairs.contains { $0.sustainableRate > 0 })
        case .monitor(let r):
            return LoadedReport(document: document, kind: .monitor, file: file, run: r.run, html: r.htmlSection(), markdown: r.markdown(),
                                headline: "\(r.checks) checks, \(r.pairs.filter(\.up).count) of \(r.pairs.count) pairs up, \(r.rewrites) rewrites",
                                ok: r.pairs.contains(where: \.up))
        }
    }

    static func percent(_ ratio: Double?) -> String {
        ratio.map { HTML.formatFixed($0 * 100, decimals: 2) + " %" } ?? "n/a"
    }
}

extension ReportWriter {
    /// After a command wrote its JSON: the run's `index.html`, and the runs index of `indexRoot`
    /// when given (the default `reports/` directory). Problems are returned, not thrown: the JSON is
    /// already safe on disk and a rendering problem must not turn a measured run into a failure.
    /// `written`: the reports just written, by file name, rendered from memory (`RunDirectory.load`).
    @discardableResult
    public static func renderRun(directory: String, indexRoot: String?, written: [String: ReportDocument] = [:]) -> [String] {
        do {
            let dir = try RunDirectory.load(directory, written: written)
            try dir.render()
            if let indexRoot { try RunIndex.write(root: indexRoot) }
            return dir.problems
        } catch {
            return ["\(error)"]
        }
    }
}
