import Foundation
import Results

extension TraceReport {
    /// trace.md: what the capture shows per resolver, for people.
    public func markdown() -> String {
        let (settings, files, packets, totals, resolvers, domains) = (result.settings, result.files, result.packets, result.totals, result.resolvers, result.domains)
        var s = "# DNS trace \(run.id)\n\n"
        if !run.complete { s += "**Incomplete:** \(run.interruption ?? "interrupted"); what was read before is below.\n\n" }
        s += "Files: " + files.map { f in
            var line = "`\(f.path)` (\(f.format ?? "?"), \(f.linkType ?? "?"), \(f.records) records"
            if let e = f.error { line += ", stopped: \(e)" + (f.errorOffset.map { " at byte \($0)" } ?? "") }
            return line + ")"
        }.joined(separator: ", ") + "\n\n"
        s += "Tmax \(Self.number(settings.tmaxMs)) ms (RFC 7680: no response within Tmax = lost; a response later than Tmax is *late*, still lost). "
        s += "DNS ports: \(settings.dnsPorts.map(String.init).joined(separator: ", "))"
        if let f = settings.filter { s += "; filter `\(f)`" }
        s += ".\n\n"
        s += "## Packets\n\n| total | decoded | DNS messages | other UDP/TCP | TCP segments skipped |\n|---:|---:|---:|---:|---:|\n"
        s += "| \(packets.total) | \(packets.decoded) | \(packets.dns) | \(packets.notDNS) | \(packets.tcpSegmentsSkipped) |\n\n"
        if let warning = snapWarning { s += "**Truncated capture:** \(warning.dropFirst("warning: truncated capture: ".count)).\n\n" }
        if !packets.undecoded.isEmpty {
            s += "Not decoded: " + packets.undecoded.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + "\n\n"
        }
        if totals.queries == 0 && totals.unmatchedResponses == 0 {
            return s + "No DNS queries in the capture.\n"
        }
        s += "## Resolvers\n\n"
        s += Self.table(header: "resolver", rows: [("all", totals)] + resolvers.map { ($0.resolver ?? "?", $0) })
        s += "\nLoss ratio with its Wilson 95% interval; reordered per RFC 4737 section 4.1 on the order of the queries; "
        s += "RTT percentiles from an HdrHistogram (0.1% precision).\n\n"
        for r in resolvers {
            guard let groups = r.groups, !groups.isEmpty else { continue }
            s += "### \(r.resolver ?? "?") by tunnel domain and record type\n\n"
            s += Self.table(header: "domain / type", rows: groups.map { ("\($0.domain ?? "?") \($0.recordType ?? "?")", $0) })
            if !r.rcodes.isEmpty {
                s += "\nRcodes: " + r.rcodes.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
                s += "; truncated (TC) \(r.truncated).\n"
            }
            s += "\n"
        }
        s += "## Domains\n\n| domain | queries | looks like |\n|---|---:|---|\n"
        for d in domains.sorted(by: { ($0.queries, $1.domain) > ($1.queries, $0.domain) }) {
            s += "| \(d.domain) | \(d.queries) | \(d.kind) |\n"
        }
        return s
    }

    public func summaryLine(directory: String) -> String {
        let (packets, totals, resolvers) = (result.packets, result.totals, result.resolvers)
        var s: String
        if totals.queries == 0 {
            s = "\(packets.total) packets, no DNS queries"
        } else {
            s = "\(packets.total) packets, \(totals.queries) queries to \(resolvers.count) resolver(s): \(totals.answered) answered, "
            s += "\(totals.lost) lost (\(totals.late) late), \(totals.duplicates) duplicate responses"
            if let p50 = totals.rttMs.p50, let p99 = totals.rttMs.p99 { s += ", RTT p50 \(Self.number(p50)) ms p99 \(Self.number(p99)) ms" }
        }
        if let warning = snapWarning { s += " [\(warning)]" }
        if !run.complete { s += " [incomplete: \(run.interruption ?? "interrupted")]" }
        return s + "\nreport: \(directory)/trace.md"
    }

    /// What the capture's snap length cut, when it cut anything: responses still matched (answered or
    /// late, contents unseen) and DNS packets cut before their question ended (not analysed at all).
    var snapWarning: String? {
        let responses = result.totals.snapTruncated ?? 0
        let packets = result.packets.undecoded["snapTruncated"] ?? 0
        guard responses > 0 || packets > 0 else { return nil }
        var parts: [String] = []
        if responses > 0 { parts.append("\(responses) responses cut by the snap length, counted by their question (contents unseen)") }
        if packets > 0 { parts.append("\(packets) packets cut before their DNS question, not analysed") }
        return "warning: truncated capture: " + parts.joined(separator: "; ") + "; capture with a larger snap length (tcpdump -s 0)"
    }

    static func table(header: String, rows: [(String, TraceStats)]) -> String {
        var s = "| \(header) | queries | answered | lost (95% CI) | late | dup | retx | reordered | RTT p50 | p90 | p99 | max |\n"
        s += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        for (name, t) in rows {
            let loss = t.lossRatio.map { ratio in
                "\(t.lost) (\(percent(ratio))" + (t.lossWilson95.flatMap { $0.count == 2 ? " \(percent($0[0]))–\(percent($0[1]))" : nil } ?? "") + ")"
            } ?? "\(t.lost)"
            let reordered = t.reorderedRatio.map { "\(t.reordered) (\(percent($0)))" } ?? "-"
            func ms(_ v: Double?) -> String { v.map { number($0) + " ms" } ?? "-" }
            s += "| \(name) | \(t.queries) | \(t.answered) | \(loss) | \(t.late) | \(t.duplicates) | \(t.retransmissions) | \(reordered) "
            s += "| \(ms(t.rttMs.p50)) | \(ms(t.rttMs.p90)) | \(ms(t.rttMs.p99)) | \(ms(t.rttMs.max)) |\n"
        }
        return s
    }

    static func percent(_ v: Double) -> String { String(format: "%.2f%%", v * 100) }
    static func number(_ v: Double) -> String { String(format: "%.3f", v) }
}
