import Foundation
public import ProbeClient

/// `monitor.json`: the pairs of a scan re-checked at an interval (issue 19, item 4): each pair's
/// stability (share of checks passed with its Wilson 95 % interval, time since the last failure,
/// its outages), how often the engine's resolver file was rewritten, and the process's memory as
/// the checks went on. Every check is a line of `history.jsonl` beside it.
public struct MonitorReport: Codable, Sendable, Hashable {
    public static let schemaName = "tunnelprobe.monitor/1"

    public var schema: String = MonitorReport.schemaName
    public var run: RunInfo
    public var scan: RunInfo
    public var intervalSeconds: Double
    public var attempts: Int
    public var timeoutMs: Int
    public var rounds: Int
    public var checks: Int
    public var elapsedSeconds: Double
    public var pairs: [PairStability]
    /// Times the resolver files were rewritten because the set of pairs that are up changed (the
    /// first write not counted), and when (seconds since the start).
    public var rewrites: Int
    public var rewriteTimes: [Double]
    /// Resident memory (VmRSS, kB) after 1, 10, 100, ... checks and at the end.
    public var memory: [MemorySample]
    /// The engines whose files are kept under exports/<engine>/.
    public var engines: [String]

    public struct MemorySample: Codable, Sendable, Hashable {
        public var checks: Int
        public var rssKB: Int
        public init(checks: Int, rssKB: Int) {
            self.checks = checks
            self.rssKB = rssKB
        }
    }

    public init(run: RunInfo, scan: RunInfo, intervalSeconds: Double, attempts: Int, timeoutMs: Int, rounds: Int, checks: Int,
                elapsedSeconds: Double, pairs: [PairStability], rewrites: Int, rewriteTimes: [Double], memory: [MemorySample],
                engines: [String]) {
        self.run = run
        self.scan = scan
        self.intervalSeconds = intervalSeconds
        self.attempts = attempts
        self.timeoutMs = timeoutMs
        self.rounds = rounds
        self.checks = checks
        self.elapsedSeconds = elapsedSeconds
        self.pairs = pairs
        self.rewrites = rewrites
        self.rewriteTimes = rewriteTimes
        self.memory = memory
        self.engines = engines
    }

    func row(_ p: PairStability) -> [String] {
        let interval = p.passInterval.map { " [\(HTML.formatFixed($0.low * 100, decimals: 1)), \(HTML.formatFixed($0.high * 100, decimals: 1))]" } ?? ""
        let since = p.lastFailureAt.map { HTML.formatFixed(elapsedSeconds - $0, decimals: 1) + " s" } ?? "never failed"
        let outages = p.outages.map { o in
            "\(HTML.formatFixed(o.downAt, decimals: 1))-\(o.upAt.map { HTML.formatFixed($0, decimals: 1) } ?? "now") s"
        }.joined(separator: ", ")
        return [p.resolver, p.domain, p.spare ? "spare" : "accepted", p.up ? "up" : "down", "\(p.passed)/\(p.checks)",
                HTML.formatFixed(p.passRatio * 100, decimals: 1) + " %" + interval, since, p.rttP50Ms.map { HTML.formatFixed($0, decimals: 1) } ?? "-",
                outages.isEmpty ? "-" : outages + (p.outagesDropped > 0 ? " (+\(p.outagesDropped) older)" : "")]
    }

    static let header = ["resolver", "domain", "kind", "now", "checks passed", "passed (Wilson 95 %)", "since last failure", "RTT p50 ms", "outages (s since start)"]

    public func markdown() -> String {
        var out = ["# Resolver stability", "",
                   "Run \(run.id) over scan \(scan.id); seed \(run.seed). Every \(HTML.formatFixed(intervalSeconds, decimals: 1)) s each pair got one tunnel-shaped query (a name of its upload MTU asking for a TXT answer of its download MTU; up to \(attempts) tries, Tmax \(timeoutMs) ms, RFC 7680). \(rounds) rounds, \(checks) checks in \(HTML.formatFixed(elapsedSeconds, decimals: 1)) s. Passed shares carry their Wilson 95 % interval; RTT is RFC 2681's, the median of the latest \(64) passing checks. Every check is a line of history.jsonl.", "",
                   "| " + Self.header.joined(separator: " | ") + " |", "|" + String(repeating: "---|", count: Self.header.count)]
        for p in pairs { out.append("| " + row(p).joined(separator: " | ") + " |") }
        out += ["", "Resolver files rewritten \(rewrites) time(s) (when the set of pairs up changed)" + (rewriteTimes.isEmpty ? "." : ", at " + rewriteTimes.map { HTML.formatFixed($0, decimals: 1) + " s" }.joined(separator: ", ") + ".")]
        if !memory.isEmpty {
            out += ["", "Memory (VmRSS): " + memory.map { "\($0.rssKB) kB after \($0.checks) checks" }.joined(separator: ", ") + "."]
        }
        return out.joined(separator: "\n") + "\n"
    }

    public func htmlSection() -> String {
        var s = "<section id=\"monitor\"><h2>Resolver stability</h2>"
        if !run.complete { s += "<p class=\"notice\"><b>Stopped</b> (\(HTML.escape(run.interruption ?? "interrupted"))): the history up to the stop is kept.</p>" }
        s += HTML.facts([
            ("Scan", HTML.escape(scan.id)),
            ("Checks", HTML.escape("\(checks) in \(rounds) rounds every \(HTML.formatFixed(intervalSeconds, decimals: 1)) s, \(HTML.formatFixed(elapsedSeconds, decimals: 1)) s in all")),
            ("Resolver files", HTML.escape("rewritten \(rewrites) time(s)")),
        ])
        s += HTML.table(Self.header, pairs.map { row($0).map(HTML.escape) }, numeric: [4, 7])
        return s + "<p class=\"muted\">Every check: <a href=\"history.jsonl\">history.jsonl</a>.</p></section>"
    }
}
