public import Results

extension PathReport {
    /// The path section of a run page: loss per direction with its interval, RTT CDF, loss over time
    /// with bursts marked, reordering extents.
    public func htmlSection() -> String {
        var s = "<section id=\"path\"><h2>Path quality</h2>"
        if !run.complete {
            s += "<p class=\"notice\"><b>Incomplete run</b> (\(HTML.escape(run.interruption ?? "interrupted"))): figures cover the probes sent before it stopped.</p>"
        }
        s += HTML.facts([
            ("Probes", HTML.escape("\(settings.count) per resolver at \(HTML.formatFixed(settings.rate, decimals: 0))/s, \(settings.uploadCharacters) characters up, \(settings.downloadBytes) bytes down in \(settings.recordType), Tmax \(HTML.formatFixed(settings.tmaxMs, decimals: 0)) ms")),
            ("Definitions", HTML.escape(conventions.loss)),
        ])
        func pct(_ p: Proportion) -> String {
            guard let r = p.ratio else { return "<span class=\"muted\">\(HTML.escape(p.reason ?? "not measured"))</span>" }
            return "\(HTML.formatFixed(r * 100, decimals: 2)) % <span class=\"muted\">[\(HTML.number((p.ciLow ?? 0) * 100, decimals: 2)), \(HTML.number((p.ciHigh ?? 0) * 100, decimals: 2))] n=\(p.samples)</span>"
        }
        s += HTML.table(
            ["resolver", "loss up", "loss down", "loss round trip", "dup up", "dup down", "reordered", "RTT p50", "RTT p99", "jitter ms"],
            resolvers.map { r in
                [HTML.escape(r.resolver), pct(r.loss.up), pct(r.loss.down), pct(r.loss.roundTrip),
                 "\(r.duplicates.up)", "\(r.duplicates.down)", r.reordering.ratio.map { HTML.formatFixed($0 * 100, decimals: 2) + " %" } ?? "–",
                 HTML.number(r.rttMs.p50, decimals: 2), HTML.number(r.rttMs.p99, decimals: 2), HTML.number(r.jitterMs, decimals: 3)]
            }, numeric: [4, 5, 7, 8, 9], caption: "Loss with Wilson 95 % interval (RFC 7680); duplicates are extra copies, never recovered losses")
        let rttSeries = resolvers.compactMap { r -> SVGChart.Series? in
            guard let cdf = r.rttMs.cdf, !cdf.isEmpty else { return nil }
            return SVGChart.Series(name: r.resolver, values: cdf)
        }
        s += "<figure>" + SVGChart.cdf(id: "path-rtt-cdf", title: "Round-trip time (CDF)", series: rttSeries, xLabel: "ms")
        s += "<figcaption>From the HdrHistogram of each resolver's answered probes (values at percentiles 1–100).</figcaption></figure>"
        for (i, r) in resolvers.enumerated() {
            let suffix = resolvers.count > 1 ? "-\(i)" : ""
            // A slice whose counts do not add up (negative, overflowing, more lost than sent) comes from
            // an edited or corrupt file: the chart is not drawn and the field is named.
            let badSlice = r.timeline?.slices.indices.first { i in
                let slice = r.timeline!.slices[i]
                guard let lost = CheckedNumber.sum([slice.lostUp, slice.lostDown, slice.lostUnknown]) else { return true }
                return slice.sent < 0 || lost > slice.sent || !slice.startMs.isFinite
            }
            if let i = badSlice {
                s += "<p class=\"notice\" id=\"path-loss-time\(suffix)\">Loss over time, \(HTML.escape(r.resolver)): \(HTML.escape(CheckedNumber.invalid("timeline.slices[\(i)] sent/lostUp/lostDown/lostUnknown")))</p>"
            } else if let t = r.timeline, !t.slices.isEmpty {
                let columns = t.slices.map { slice -> SVGChart.Column in
                    let lost = slice.lostUp + slice.lostDown + slice.lostUnknown
                    return SVGChart.Column(label: HTML.formatFixed(slice.startMs / 1000, decimals: 1),
                                           value: slice.sent == 0 ? 0 : Double(lost) / Double(slice.sent) * 100,
                                           highlighted: slice.longestBurst >= 3)
                }
                s += "<figure>" + SVGChart.columns(id: "path-loss-time\(suffix)", title: "Loss over time, \(r.resolver)", columns: columns,
                                                   xLabel: "seconds since the first probe", yLabel: "% lost", labelEvery: max(1, columns.count / 10))
                s += "<figcaption>Round-trip loss per \(HTML.formatFixed(t.sliceMs, decimals: 0)) ms of send time; red slices hold a loss burst of 3 or more consecutive probes (RFC 3357 loss period).</figcaption></figure>"
            }
            let extents = r.reordering.roundTrip.extents.compactMap { k, v in Int(k).map { ($0, v) } }.sorted { $0.0 < $1.0 }
            if !extents.isEmpty {
                s += "<figure>" + SVGChart.columns(id: "path-reorder-extent\(suffix)", title: "Reordering extent, \(r.resolver)",
                                                   columns: extents.map { .init(label: "\($0.0)", value: Double($0.1)) },
                                                   xLabel: "extent (RFC 4737)", yLabel: "packets") + "</figure>"
            } else {
                s += "<p class=\"muted\" id=\"path-reorder-extent\(suffix)\">Reordering, \(HTML.escape(r.resolver)): no packet arrived out of order (RFC 4737, \(r.reordering.samples) samples).</p>"
            }
            let g = r.gilbert
            s += "<p>Gilbert fit (\(HTML.escape(conventions.gilbertH))): p = \(HTML.number(g.p, decimals: 4)), r = \(HTML.number(g.r, decimals: 4)), h = \(HTML.number(g.h, decimals: 3))\(g.reason.map { " <span class=\"muted\">(\(HTML.escape($0)))</span>" } ?? "")</p>"
        }
        return s + "</section>"
    }
}
