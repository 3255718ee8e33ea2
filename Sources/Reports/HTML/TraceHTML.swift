import Results
extension TraceReport {
    /// The capture-analysis section: packets decoded, per resolver answered/lost/late, RTT, sizes.
    public func htmlSection() -> String {
        let (files, packets, totals, resolvers, domains) = (result.files, result.packets, result.totals, result.resolvers, result.domains)
        var s = "<section id=\"trace\"><h2>Capture analysis</h2>"
        if !run.complete {
            s += "<p class=\"notice\"><b>Incomplete</b> (\(HTML.escape(run.interruption ?? "stopped"))): the analysis covers what was read before it.</p>"
        }
        let undecoded = packets.undecoded.sorted { $0.value > $1.value }.map { "\(HTML.escape($0.key)) \($0.value)" }.joined(separator: ", ")
        s += HTML.facts([
            ("Files", files.map { f in HTML.escape("\(f.path) (\(f.format ?? "?"), \(f.linkType ?? "?"), \(f.records) records)") + (f.error.map { " " + HTML.badge("error", .bad) + " " + HTML.escape($0) } ?? "") }.joined(separator: "<br>")),
            ("Packets", "\(packets.total) read, \(packets.decoded) decoded, \(packets.dns) DNS" + (undecoded.isEmpty ? "" : "; undecoded: \(undecoded)")),
            ("Totals", "\(totals.queries) queries, \(totals.answered) answered, \(totals.lost) lost, \(totals.late) late, \(totals.duplicates) duplicate responses"),
        ])
        s += HTML.table(["resolver", "queries", "answered", "lost", "loss", "late", "dup", "reordered", "RTT p50", "RTT p99"],
                        resolvers.map { r in
                            [HTML.escape(r.resolver ?? "?"), "\(r.queries)", "\(r.answered)", "\(r.lost)",
                             r.lossRatio.map { HTML.formatFixed($0 * 100, decimals: 2) + " %" } ?? "–", "\(r.late)", "\(r.duplicates)",
                             r.reorderedRatio.map { HTML.formatFixed($0 * 100, decimals: 2) + " %" } ?? "–",
                             HTML.number(r.rttMs.p50, decimals: 2), HTML.number(r.rttMs.p99, decimals: 2)]
                        }, numeric: [1, 2, 3, 4, 5, 6, 7, 8, 9], caption: "Per resolver; lost = no response within Tmax (RFC 7680); reordered per RFC 4737 on the query order")
        let bars = resolvers.map { SVGChart.Bar(label: $0.resolver ?? "?", value: ($0.lossRatio ?? 0) * 100, series: ($0.lossRatio ?? 0) > 0.05 ? -1 : 0) }
        s += "<figure>" + SVGChart.bars(id: "trace-loss", title: "Unanswered queries per resolver", bars: bars, unit: "% lost") + "</figure>"
        let sizes = totals.responseSizes.map { b in SVGChart.Column(label: b.toBytes.map { "<\($0)" } ?? "≥\(b.fromBytes)", value: Double(b.count)) }
        if !sizes.isEmpty {
            s += "<figure>" + SVGChart.columns(id: "trace-response-sizes", title: "Response sizes", columns: sizes, xLabel: "bytes", yLabel: "responses") + "</figure>"
        }
        if !domains.isEmpty {
            s += "<h3>Tunnel domains</h3>" + HTML.table(["domain", "queries", "kind"], domains.map { [HTML.escape($0.domain), "\($0.queries)", HTML.escape($0.kind)] }, numeric: [1])
        }
        return s + "</section>"
    }
}
