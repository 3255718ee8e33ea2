import Base
import Foundation
public import Results

extension MonitorReport {
    func row(_ p: PairStability) -> [String] {
        let interval = p.passInterval.map { " [\(HTML.formatFixed($0.low * 100, decimals: 1)), \(HTML.formatFixed($0.high * 100, decimals: 1))]" } ?? ""
        let since = p.lastFailureAt.map { HTML.formatFixed(elapsedSeconds - $0, decimals: 1) + " s" } ?? "never failed"
        let outages = p.outages.map { o in
            "\(HTML.formatFixed(o.downAt, decimals: 1))-\(o.upAt.map { HTML.formatFixed($0, decimals: 1) } ?? "now") s"
        }.joined(separator: ", ")
        return [p.resolver, p.domain, p.spare ? "spare" : "accepted", p.up ? "up" : "down", "\(p.passed)/\(p.checks)",
                HTML.formatFixed(p.passRatio * 100, decimals: 1) + " %" + interval, since, p.rttP50Ms.map { HTML.formatFixed($0, decimals: 1) } ?? "-",
                outages.isEmpty ? "-" : outages + (p.outagesDropped > 0 ? " (+\(p.outagesDropped) older)" : ""),
                Self.drift(p)]
    }

    /// Failed checks whose smaller queries passed, with the least sizes they found.
    static func drift(_ p: PairStability) -> String {
        guard p.sizeFailures > 0 else { return "-" }
        var parts: [String] = []
        if let q = p.leastQueryCharacters { parts.append("query \(q) characters") }
        if let a = p.leastAnswerBytes { parts.append("answer \(a) bytes") }
        return "\(p.sizeFailures) check(s) failed at the scan's sizes, smaller passed" + (parts.isEmpty ? "" : " (least: " + parts.joined(separator: ", ") + ")")
    }

    /// A rate and when its measurement began: "41.3 q/s at 12.0 s".
    static func rateAt(_ r: RateSample) -> String {
        QueryRate.text(r.sustainableRate) + " q/s at " + HTML.formatFixed(r.at, decimals: 1) + " s"
    }

    /// The pairs whose rate was measured, one row each: how many times, the first, the latest with
    /// its class, loss and RTT, the lowest and the highest.
    func rateRows() -> [[String]] {
        pairs.compactMap { p in
            guard let r = p.rates else { return nil }
            let last = r.last
            let loss = last.loss?.percentWithInterval { HTML.formatFixed($0, decimals: 1) } ?? "-"
            let rtt = last.rttMs?.figures(Percentiles.p50p90p99) { HTML.formatFixed($0, decimals: 1) } ?? "-"
            return [p.resolver, p.domain, "\(r.measurements)", Self.rateAt(r.first), Self.rateAt(last), last.limitedBy.rawValue, loss, rtt,
                    Self.rateAt(r.lowest), Self.rateAt(r.highest)]
        }
    }

    static let rateHeader = ["resolver", "domain", "measured", "first", "latest", "latest limited by", "latest loss (Wilson 95 %)",
                             "latest RTT p50 / p90 / p99 ms", "lowest", "highest"]

    /// How the rates were measured, in one paragraph.
    func rateMethod(_ r: RateSettings) -> String {
        let c = r.capacity
        return "Each pair that was up had its sustainable query rate measured every \(HTML.formatFixed(r.intervalSeconds, decimals: 0)) s (\(r.parallel) pair(s) at once, not checked meanwhile): paced tunnel-shaped queries from \(QueryRate.text(c.startRate)) q/s, times \(c.growth) per \(HTML.formatFixed(c.stepSeconds, decimals: 1)) s step, never above \(QueryRate.text(c.ceiling)) q/s nor longer than \(HTML.formatFixed(c.pairBudgetSeconds, decimals: 0)) s per pair, until a step was troubled (more than \(HTML.formatFixed(c.maxFailureRatio * 100, decimals: 1)) % and at least \(c.minFailures) queries failed, which ends the step at once, or its median RTT doubled); the knee was narrowed by bisection (\(c.refineSteps) steps) and the sustainable rate is the highest clean step's (RFC 2544 26.1 throughput). Loss: RFC 7680, Tmax \(CheckedNumber.int(c.timeoutSeconds * 1000).map(String.init) ?? CheckedNumber.invalid("rates.capacity.timeoutSeconds")) ms, Wilson 95 % interval; RTT: RFC 2681, nearest-rank percentiles. The engines' resolver files list measured pairs by the download goodput of their latest measurement (answered queries per second x the engine's payload bytes per answer), best first. Every measurement is a line of history.jsonl with `rate`."
    }

    static let header = ["resolver", "domain", "kind", "now", "checks passed", "passed (Wilson 95 %)", "since last failure", "RTT p50 ms", "outages (s since start)", "MTU drift"]

    public func markdown() -> String {
        var out = ["# Resolver stability", "",
                   "Run \(run.id) over scan \(scan.id); seed \(run.seed). Every \(HTML.formatFixed(intervalSeconds, decimals: 1)) s each pair got one tunnel-shaped query (a name of its upload MTU asking for a TXT answer of its download MTU; up to \(attempts) tries, Tmax \(timeoutMs) ms, RFC 7680). \(rounds) rounds, \(checks) checks in \(HTML.formatFixed(elapsedSeconds, decimals: 1)) s. Passed shares carry their Wilson 95 % interval; RTT is RFC 2681's, the median of the latest \(64) passing checks. A failed check is asked again with the smallest query: if that passes, the pair is up but its sizes shrank (MTU drift), and each direction is bisected with the other held small; the least sizes found are shown. Every check is a line of history.jsonl.", "",
                   "| " + Self.header.joined(separator: " | ") + " |", "|" + String(repeating: "---|", count: Self.header.count)]
        for p in pairs { out.append("| " + row(p).joined(separator: " | ") + " |") }
        if let rates {
            out += ["", "## Sustainable rate over time", "", rateMethod(rates), ""]
            let rows = rateRows()
            if rows.isEmpty {
                out.append("No measurement ended.")
            } else {
                out += ["| " + Self.rateHeader.joined(separator: " | ") + " |", "|" + String(repeating: "---|", count: Self.rateHeader.count)]
                for r in rows { out.append("| " + r.joined(separator: " | ") + " |") }
            }
        }
        out += ["", "Resolver files rewritten \(rewrites) time(s) (when the pairs up or their order changed)" + (rewriteTimes.isEmpty ? "." : ", at " + rewriteTimes.map { HTML.formatFixed($0, decimals: 1) + " s" }.joined(separator: ", ") + ".")]
        if !memory.isEmpty {
            out += ["", "Memory (VmRSS; anonymous part; heap in use by malloc): " + memory.map(Self.memory).joined(separator: ", ") + "."]
        }
        return out.joined(separator: "\n") + "\n"
    }

    /// "38072 kB (anon 3172 kB, heap 935 kB) after 10000 checks".
    static func memory(_ m: MemorySample) -> String {
        var parts: [String] = []
        if let a = m.anonKB { parts.append("anon \(a) kB") }
        if let h = m.heapInUseKB { parts.append("heap \(h) kB") }
        return "\(m.rssKB) kB" + (parts.isEmpty ? "" : " (" + parts.joined(separator: ", ") + ")") + " after \(m.checks) checks"
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
        if let rates {
            s += "<h3>Sustainable rate over time</h3><p>" + HTML.escape(rateMethod(rates)) + "</p>"
            let rows = rateRows()
            s += rows.isEmpty ? "<p class=\"muted\">No measurement ended.</p>" : HTML.table(Self.rateHeader, rows.map { $0.map(HTML.escape) }, numeric: [2])
        }
        return s + "<p class=\"muted\">Every check" + (rates == nil ? "" : " and rate measurement") + ": <a href=\"history.jsonl\">history.jsonl</a>.</p></section>"
    }
}
