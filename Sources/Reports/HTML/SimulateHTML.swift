public import Results
extension SimulateReport {
    /// The simulation section: levels side by side (residual loss against overhead, delay p99), the
    /// recommendation and the ISA-L check.
    public func htmlSection() -> String {
        var s = "<section id=\"simulate\"><h2>FEC + ARQ simulation</h2>"
        if !run.complete {
            s += "<p class=\"notice\"><b>Incomplete</b> (\(HTML.escape(run.interruption ?? "stopped"))).</p>"
        }
        let source = input.file.map { "\(HTML.escape($0))" + (input.sha256.map { " <span class=\"muted\">sha256 \(HTML.escape(String($0.prefix(16))))…</span>" } ?? "") }
            ?? HTML.escape(input.model ?? input.kind)
        s += HTML.facts([
            ("Input", source),
            ("Runs", "\(input.runs) × \(input.opportunitiesPerRun) channel opportunities, seed \(input.seed)"),
            ("Overhead budget", HTML.escape(budgetSetting)),
            ("Traffic", HTML.escape("\(settings.traffic), \(settings.symbolSize)-byte symbols, \(settings.headerBytes) bytes of framing, direction \(settings.direction)")),
            ("ISA-L check", "\(isal.groupsVerified) groups encoded and rebuilt through \(HTML.escape(isal.library)), \(isal.mismatches == 0 ? HTML.badge("0 mismatches", .ok) : HTML.badge("\(isal.mismatches) mismatches", .bad))"),
        ])
        for r in recommendations.isEmpty ? (recommendation.map { [$0] } ?? []) : recommendations {
            s += "<p>\(HTML.badge("recommended: \(r.level)", r.withinBudget ? .ok : .warn)) (\(HTML.escape(r.direction))) — \(HTML.escape(r.reason))</p>"
            if let note = budgetNote(r) { s += "<p class=\"notice\">\(HTML.escape(note))</p>" }
        }
        func pct(_ v: Double?) -> String { v.map { HTML.formatFixed($0 * 100, decimals: 3) + " %" } ?? "–" }
        if let rule = recommendationRule { s += "<p class=\"muted\">Rule: \(HTML.escape(rule))</p>" }
        s += HTML.table(["level", "k+m nominal → formed", "residual loss FEC only", "residual loss FEC+ARQ", "stall total ms", "longest stall ms",
                         "in-order p99 ms", "goodput B/s", "overhead", "recovered by FEC", "repaired by ARQ", "groups by flush"],
                        levels.map { l in
                            [HTML.escape("\(l.level) (\(l.direction))"), HTML.escape(Self.formed(l)), pct(l.residualLossFEC), pct(l.residualLoss),
                             HTML.number(l.stallMs.totalMs, decimals: 0), HTML.number(l.stallMs.max, decimals: 0),
                             HTML.number(l.inOrderDelayMs.p99, decimals: 1), HTML.number(l.goodputBytesPerSecond, decimals: 0),
                             HTML.number(l.overhead, decimals: 3), "\(l.recoveredByFEC)", "\(l.repairedByARQ)", "\(l.groups.closedByFlushTimeout)"]
                        }, numeric: [2, 3, 4, 5, 6, 7, 8, 9, 10, 11], caption: "Overhead = bytes on the wire per useful byte (repair, ACK and NACK included); k+m formed = mean originals and repair per group as the flush timeout closed them")
        let recommended = Set((recommendations.isEmpty ? (recommendation.map { [$0] } ?? []) : recommendations).map { "\($0.level)|\($0.direction)" })
        let points = levels.map { l in
            SVGChart.Point(label: l.level, x: l.overhead ?? 0, y: (l.residualLossFEC ?? 0) * 100,
                           highlighted: recommended.contains("\(l.level)|\(l.direction)"))
        }
        s += "<figure>" + SVGChart.scatter(id: "simulate-loss-overhead", title: "Residual loss after FEC alone vs overhead", points: points,
                                           xLabel: "bytes on the wire per useful byte", yLabel: "% lost after FEC") + "</figure>"
        let bars = levels.map { SVGChart.Bar(label: "\($0.level) \($0.k)+\($0.m)", value: $0.inOrderDelayMs.p99 ?? 0,
                                             series: recommended.contains("\($0.level)|\($0.direction)") ? 2 : 0) }
        s += "<figure>" + SVGChart.bars(id: "simulate-delay-p99", title: "In-order delivery delay p99 per level (FEC + ARQ)", bars: bars, unit: "ms") + "</figure>"
        let stallBars = levels.map { SVGChart.Bar(label: "\($0.level) \(Self.formed($0))", value: $0.stallMs.totalMs,
                                                  series: recommended.contains("\($0.level)|\($0.direction)") ? 2 : 0) }
        s += "<figure>" + SVGChart.bars(id: "simulate-stall-total", title: "Total stall time per level (all runs)", bars: stallBars, unit: "ms") + "</figure>"
        return s + "</section>"
    }
}
