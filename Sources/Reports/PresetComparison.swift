import Foundation
import Results

/// `report presets RUN...`: the FEC levels of several `simulate` runs side by side, one column group
/// per path, on the metrics the recommendation rule uses (residual loss with and without ARQ, total
/// and longest stall, in-order delay p99, goodput, overhead), with each run's recommendation and its
/// reason. Figures are copied from the runs' simulate.json, never recomputed, so the table and the
/// runs cannot disagree.
public struct PresetComparison: Codable, Sendable, Hashable {
    public static let schemaName = "tunnelprobe.presets/1"
    public var schema: String = PresetComparison.schemaName
    public var paths: [Path]
    /// Level names in the order of the first run, then any other run's extra levels.
    public var levels: [String]
    /// Anything a reader must know: runs whose settings differ, levels missing from a run.
    public var notes: [String]

    public struct Path: Codable, Sendable, Hashable {
        /// The name given on the command line (`name=DIR`), or the run directory's name.
        public var name: String
        public var directory: String
        public var runID: String
        public var seed: UInt64
        /// What was simulated: the model, or the fates/capture file.
        public var input: String
        public var direction: String
        public var arq: Bool
        /// The run's overhead budget; nil: none (the default).
        public var overheadBudget: Double?
        public var recommended: String?
        public var reason: String?
        public var dropped: [String]
        public var rows: [Row]
    }

    public struct Row: Codable, Sendable, Hashable {
        public var level: String
        /// Nominal → formed k+m, as the run's table shows it.
        public var groups: String
        public var residualLossFEC: Double?
        public var residualLoss: Double?
        public var stallTotalMs: Double
        public var longestStallMs: Double
        public var inOrderP99Ms: Double?
        public var goodputBytesPerSecond: Double?
        public var overhead: Double?
        public var recommended: Bool
        public var droppedByBudget: Bool
    }

    public enum Failure: Error, CustomStringConvertible, Equatable {
        case noSimulation(String)
        case tooFew
        public var description: String {
            switch self {
            case .noSimulation(let dir): "\(dir): no simulate.json in this run directory"
            case .tooFew: "give at least one simulate run directory"
            }
        }
    }

    /// Lays the runs side by side; `named` pairs a column name with each run directory.
    public static func compare(_ named: [(name: String, directory: RunDirectory)]) throws(Failure) -> PresetComparison {
        guard !named.isEmpty else { throw .tooFew }
        var paths: [Path] = []
        var levels: [String] = []
        var notes: [String] = []
        for (name, dir) in named {
            guard let report = dir.simulateReport else { throw .noSimulation(dir.path) }
            let direction = report.settings.direction == "both" ? "download" : report.settings.direction
            let recommendation = (report.recommendations.isEmpty ? (report.recommendation.map { [$0] } ?? []) : report.recommendations)
                .first { $0.direction == direction } ?? report.recommendation
            let dropped = Set((recommendation?.dropped ?? []).map(\.level))
            let rows = report.levels.filter { $0.direction == direction }.map { l in
                Row(level: l.level, groups: SimulateReport.formed(l), residualLossFEC: l.residualLossFEC, residualLoss: l.residualLoss,
                    stallTotalMs: l.stallMs.totalMs, longestStallMs: l.stallMs.max, inOrderP99Ms: l.inOrderDelayMs.p99,
                    goodputBytesPerSecond: l.goodputBytesPerSecond, overhead: l.overhead,
                    recommended: recommendation?.level == l.level, droppedByBudget: dropped.contains(l.level))
            }
            for row in rows where !levels.contains(row.level) { levels.append(row.level) }
            let input = report.input.model ?? report.input.file ?? report.input.kind
            paths.append(Path(name: name, directory: dir.path, runID: report.run.id, seed: report.input.seed, input: input,
                              direction: direction, arq: report.settings.arq.enabled, overheadBudget: report.settings.overheadBudget,
                              recommended: recommendation?.level, reason: recommendation?.reason,
                              dropped: (recommendation?.dropped ?? []).map { "\($0.level) (overhead \(String(format: "%.3f", $0.overhead)))" },
                              rows: rows))
        }
        for path in paths {
            let missing = levels.filter { level in !path.rows.contains { $0.level == level } }
            if !missing.isEmpty { notes.append("\(path.name): no row for \(missing.joined(separator: ", "))") }
        }
        if Set(paths.map(\.arq)).count > 1 { notes.append("the runs differ in ARQ (on in some, off in others): residual loss is not comparable across them") }
        if Set(paths.map(\.overheadBudget)).count > 1 { notes.append("the runs used different overhead budgets") }
        if Set(paths.map(\.direction)).count > 1 { notes.append("the runs simulate different directions") }
        return PresetComparison(paths: paths, levels: levels, notes: notes)
    }

    func row(_ path: Path, _ level: String) -> Row? { path.rows.first { $0.level == level } }

    /// The metrics of the table, each with its formatter.
    static let metrics: [(title: String, value: @Sendable (Row) -> String)] = [
        ("residual loss, FEC only", { pct($0.residualLossFEC) }),
        ("residual loss, FEC + ARQ", { pct($0.residualLoss) }),
        ("total stall ms", { fixed($0.stallTotalMs, 0) }),
        ("longest stall ms", { fixed($0.longestStallMs, 0) }),
        ("in-order p99 ms", { $0.inOrderP99Ms.map { fixed($0, 1) } ?? "–" }),
        ("goodput B/s", { $0.goodputBytesPerSecond.map { fixed($0, 0) } ?? "–" }),
        ("overhead", { $0.overhead.map { fixed($0, 3) } ?? "–" }),
    ]

    static func pct(_ v: Double?) -> String { v.map { fixed($0 * 100, 3) + " %" } ?? "–" }
    static func fixed(_ v: Double, _ decimals: Int) -> String { v.isFinite ? String(format: "%.\(decimals)f", v) : "–" }

    func mark(_ r: Row) -> String { r.recommended ? " ✔" : (r.droppedByBudget ? " ✗" : "") }

    public func markdown() -> String {
        var out = ["# FEC levels on \(paths.count) path(s)", ""]
        for p in paths {
            out.append("- **\(p.name)**: `\(p.input)` (run \(p.runID), seed \(p.seed), \(p.direction), ARQ \(p.arq ? "on" : "off"), budget \(p.overheadBudget.map { Self.fixed($0, 2) } ?? "none"))"
                       + " — recommended **\(p.recommended ?? "none")**" + (p.reason.map { ": \($0)" } ?? ""))
            if !p.dropped.isEmpty { out.append("  - dropped by the overhead budget: \(p.dropped.joined(separator: ", "))") }
        }
        out.append("")
        out.append("✔ recommended on that path, ✗ dropped by the overhead budget.")
        for metric in Self.metrics {
            out.append("")
            out.append("## \(metric.title)")
            out.append("")
            out.append("| level | " + paths.map(\.name).joined(separator: " | ") + " |")
            out.append("|---|" + paths.map { _ in "---:|" }.joined())
            for level in levels {
                let cells = paths.map { p in row(p, level).map { metric.value($0) + mark($0) } ?? "–" }
                out.append("| \(level) | " + cells.joined(separator: " | ") + " |")
            }
        }
        if !notes.isEmpty {
            out.append("")
            out.append("## Notes")
            out.append("")
            for n in notes { out.append("- \(n)") }
        }
        return out.joined(separator: "\n") + "\n"
    }

    public func html() -> String {
        var s = "<section id=\"presets\"><h2>FEC levels on \(paths.count) path(s)</h2>"
        for p in paths {
            s += "<p><b>\(HTML.escape(p.name))</b>: <code>\(HTML.escape(p.input))</code> — "
            s += HTML.badge("recommended: \(p.recommended ?? "none")", p.recommended == nil ? .warn : .ok)
            s += " \(HTML.escape(p.reason ?? ""))"
            if !p.dropped.isEmpty { s += " <span class=\"muted\">(dropped by the budget: \(HTML.escape(p.dropped.joined(separator: ", "))))</span>" }
            s += "</p>"
        }
        var header = ["level"]
        for metric in Self.metrics { for p in paths { header.append("\(metric.title) — \(p.name)") } }
        let rows = levels.map { level in
            [HTML.escape(level)] + Self.metrics.flatMap { metric in
                paths.map { p in row(p, level).map { HTML.escape(metric.value($0) + mark($0)) } ?? "–" }
            }
        }
        s += HTML.table(header, rows, numeric: Set(1..<header.count),
                        caption: "✔ recommended on that path, ✗ dropped by the overhead budget; figures from each run's simulate.json")
        // One chart per metric the rule ranks on; bars grouped by level, one series per path.
        let charts: [(id: String, title: String, unit: String, value: (Row) -> Double?)] = [
            ("presets-longest-stall", "Longest stall per level and path", "ms", { $0.longestStallMs }),
            ("presets-residual", "Residual loss after FEC + ARQ per level and path", "%", { $0.residualLoss.map { $0 * 100 } }),
            ("presets-goodput", "Goodput per level and path", "B/s", { $0.goodputBytesPerSecond }),
        ]
        for chart in charts {
            var bars: [SVGChart.Bar] = []
            for level in levels {
                for (i, p) in paths.enumerated() {
                    guard let r = row(p, level), let v = chart.value(r), v.isFinite else { continue }
                    bars.append(SVGChart.Bar(label: "\(level) · \(p.name)" + mark(r), value: v, series: i % 4))
                }
            }
            s += "<figure>" + SVGChart.bars(id: chart.id, title: chart.title, bars: bars, unit: chart.unit) + "</figure>"
        }
        if !notes.isEmpty { s += "<ul>" + notes.map { "<li>\(HTML.escape($0))</li>" }.joined() + "</ul>" }
        return s + "</section>"
    }
}
