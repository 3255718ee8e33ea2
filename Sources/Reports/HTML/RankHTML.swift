import Base
public import Results
extension RankReport {
    /// The `<section>` of the run page: each pair's knee with its steps charted, then per engine
    /// the ranking and the plan.
    public func htmlSection() -> String {
        var s = "<section id=\"rank\"><h2>Resolver capacity and ranking</h2>"
        if !run.complete {
            s += "<p class=\"notice\"><b>Incomplete run</b> (\(HTML.escape(run.interruption ?? "interrupted"))): only the pairs that finished are shown.</p>"
        }
        s += HTML.facts([
            ("Scan", HTML.escape(scan.id)),
            ("Steps", HTML.escape("from \(HTML.formatFixed(settings.startRate, decimals: 1)) q/s, x\(settings.growth) per \(HTML.formatFixed(settings.stepSeconds, decimals: 1)) s step, up to \(HTML.formatFixed(settings.ceiling, decimals: 0)) q/s; \(settings.refineSteps) bisection steps (RFC 2544 26.1)")),
            ("Trouble", HTML.escape("more than \(HTML.formatFixed(settings.maxFailureRatio * 100, decimals: 1)) % of a step's queries failed (RFC 7680 loss, Tmax \(HTML.formatFixed(settings.timeoutSeconds * 1000, decimals: 0)) ms; REFUSED, SERVFAIL, wrong) or its median RTT (RFC 2681) above twice the first step's")),
            ("Pairs", "\(pairs.count) measured" + (notMeasured.isEmpty ? "" : ", \(notMeasured.count) not measured")),
        ])
        s += HTML.table(["resolver", "transport", "domain", "sustainable q/s", "first troubled q/s", "limited by", "loss at sustainable", "RTT p50 / p90 / p99 ms", "evidence"],
                        pairs.map { p in
                            [HTML.escape(p.resolver), (p.transport ?? .udp).rawValue, HTML.escape(p.domain), HTML.number(p.sustainableRate),
                             HTML.number(p.troubledRate), HTML.badge(p.limitedBy.rawValue, p.sustainableRate > 0 ? .neutral : .bad),
                             p.lossAtSustainable?.percentWithInterval { HTML.formatFixed($0, decimals: 1) } ?? "–",
                             p.rttAtSustainableMs?.figures(Percentiles.p50p90p99) { HTML.formatFixed($0, decimals: 1) } ?? "–",
                             HTML.escape(p.evidence)]
                        }, numeric: [3, 4])
        // Over TCP, TLS and HTTPS: the per-transport table of rank.md, with what a stream changes.
        let perTransport = transportRows(ms: { $0.map { HTML.formatFixed($0, decimals: 1) } ?? "–" },
                                         rate: { HTML.formatFixed($0, decimals: $0 >= 100 ? 0 : 1) })
        if !perTransport.isEmpty {
            s += "<h3>Per transport</h3><p>\(HTML.escape(Self.transportNote))</p>"
            s += HTML.table(["transport", "pairs", "sustainable q/s", "RTT p50 ms", "first query ms", "connections set up / failed"],
                            perTransport.map { $0.map(HTML.escape) }, numeric: [1, 2, 3, 4])
        }
        for p in pairs where !p.steps.isEmpty {
            s += "<details><summary>\(HTML.escape(p.resolver)): \(p.steps.count) steps</summary>"
            s += HTML.table(["rate asked", "rate sent", "sent", "answered", "lost", "REFUSED", "SERVFAIL", "other", "RTT p50 ms", "trouble"],
                            p.steps.map { st in
                                [HTML.number(st.targetRate), HTML.number(st.offeredRate), "\(st.sent)", "\(st.answered)", "\(st.lost)",
                                 "\(st.refused)", "\(st.servfail)", "\(st.otherFailures)", HTML.number(st.rttMs?.p50),
                                 HTML.escape(st.trouble ?? "")]
                            }, numeric: [0, 1, 2, 3, 4, 5, 6, 7, 8])
            s += "</details>"
        }
        for e in engines {
            s += "<h3>\(HTML.escape(e.name))</h3>"
            s += "<p>Goodput = sustainable rate x (1 - loss) x the engine's payload bytes per query at the synced \(HTML.escape(e.uploadSetting ?? "upload")) \(e.upload.map(String.init) ?? "–") and \(HTML.escape(e.downloadSetting ?? "download")) \(e.download.map(String.init) ?? "–").</p>"
            let bars = e.pairs.map { SVGChart.Bar(label: $0.resolver, value: $0.downloadGoodput / 1000) }
            if !bars.isEmpty {
                s += "<figure>" + SVGChart.bars(id: "rank-\(e.engine.rawValue)", title: "Expected download goodput per resolver (kB/s)",
                                                bars: bars, unit: "kB/s", reference: nil) + "</figure>"
            }
            s += HTML.table(["rank", "resolver", "q/s", "up B/query", "down B/query", "up goodput B/s", "down goodput B/s"], e.pairs.map { p in
                ["\(p.rank)", HTML.escape(p.resolver), HTML.number(p.sustainableRate), "\(p.uploadBytesPerQuery)", "\(p.downloadBytesPerQuery)",
                 HTML.number(p.uploadGoodput, decimals: 0), HTML.number(p.downloadGoodput, decimals: 0)]
            }, numeric: [0, 2, 3, 4, 5, 6])
            if let plan = e.plan {
                s += "<p class=\"notice\(plan.reachable ? "" : " bad")\"><b>Plan:</b> \(HTML.escape(plan.sentence)).</p><ul>"
                    + plan.uses.map { "<li>\(HTML.escape($0.resolver)) at \(HTML.formatFixed($0.rate, decimals: 1)) q/s: \(HTML.formatFixed($0.goodput, decimals: 0)) B/s</li>" }.joined()
                    + "</ul>"
            }
            if !e.exports.isEmpty {
                s += "<p class=\"muted\">Files, best first: " + e.exports.map { "<a href=\"exports/\(e.engine.rawValue)/\(HTML.escape($0.name))\">\(HTML.escape($0.name))</a>" }.joined(separator: " · ") + "</p>"
            }
        }
        return s + "</section>"
    }
}
