public import Results
extension ScanReport {
    /// The scan's section of a run page: the synced MTU, MTU per accepted pair, RTTs, rejections.
    public func htmlSection() -> String {
        var s = "<section id=\"scan\"><h2>Resolver scan</h2>"
        if !run.complete {
            s += "<p class=\"notice\"><b>Incomplete run</b> (\(HTML.escape(run.interruption ?? "interrupted"))): only the pairs that finished are shown.</p>"
        }
        s += HTML.facts([
            ("Domains", HTML.escape(settings.domains.joined(separator: ", "))),
            ("Pairs", "\(summary.pairs) tested of \(CheckedNumber.sum([summary.pairs, summary.notTested]).map(String.init) ?? CheckedNumber.invalid("summary.notTested")); \(HTML.badge("\(summary.accepted) accepted", summary.accepted > 0 ? .ok : .bad)) \(summary.rejected) rejected"),
            ("Synced MTU", synced.upload.map { up in
                "upload <b>\(up)</b> B (QNAME \(synced.uploadQnameChars.map(String.init) ?? "–") chars), download <b>\(synced.download ?? 0)</b> B (response \(synced.downloadResponseSize.map(String.init) ?? "–") B)"
            } ?? "none: no pair accepted"),
            ("Probing", HTML.escape("\(settings.encoding) names, \(settings.recordType) answers, timeout \(settings.timeoutMs) ms, \(settings.attempts) attempts per size, \(summary.queries) queries in \(HTML.formatFixed(summary.durationSeconds, decimals: 1)) s")),
        ])
        if let server {
            s += "<p class=\"notice\"><b>Probed against your MasterDnsVPN server</b> (\(server.edition == "go" ? "Go" : HTML.escape(server.edition)) edition, encryption method \(server.encryptionMethod) \(HTML.escape(server.encryptionName))): the sizes are MasterDnsVPN's own MTUs. <b>Not authenticated:</b> \(HTML.escape(server.authentication)). On the wire: \(HTML.escape(server.wireExposure)). The engine model agrees on \(server.modelCheck.agreeing) of \(server.modelCheck.pairs) usable pair(s).</p>"
        }
        s += engineHTML()
        if let endToEnd { s += endToEnd.html() }
        let accepted = pairs.filter(\.accepted)
        let label: (ScanPair) -> String = { settings.domains.count > 1 ? "\($0.resolver) \($0.domain)" : $0.resolver }
        if !accepted.isEmpty {
            let down = accepted.sorted { ($0.download?.bytes ?? 0) > ($1.download?.bytes ?? 0) }
                .map { SVGChart.Bar(label: label($0), value: Double($0.download?.bytes ?? 0)) }
            let up = accepted.sorted { ($0.upload?.bytes ?? 0) > ($1.upload?.bytes ?? 0) }
                .map { SVGChart.Bar(label: label($0), value: Double($0.upload?.bytes ?? 0), series: 1) }
            s += "<figure>" + SVGChart.bars(id: "scan-mtu-download", title: "Download MTU per resolver (payload bytes per response)",
                                            bars: down, unit: "bytes",
                                            reference: synced.download.map { (Double($0), "synced \($0)") })
            s += "<figcaption>Sorted bars; the dashed line is the synced MTU (the minimum over accepted pairs).</figcaption></figure>"
            s += "<figure>" + SVGChart.bars(id: "scan-mtu-upload", title: "Upload MTU per resolver (payload bytes per query)",
                                            bars: up, unit: "bytes",
                                            reference: synced.upload.map { (Double($0), "synced \($0)") }) + "</figure>"
            let rtts = accepted.compactMap(\.rttMs)
            s += "<figure>" + SVGChart.cdf(id: "scan-rtt-cdf", title: "Median RTT of accepted pairs (CDF)",
                                           series: [.init(name: "accepted pairs (\(rtts.count))", values: rtts)], xLabel: "ms")
            s += "<figcaption>One sample per pair: the median over its answered probes.</figcaption></figure>"
        }
        let rejected = pairs.filter { !$0.accepted }
        if !rejected.isEmpty {
            s += "<h3>Why pairs were rejected</h3>"
            let reasons = summary.rejectedBy.sorted { ($0.value, $1.key) > ($1.value, $0.key) }
            s += HTML.table(["reason", "pairs"], reasons.map { [HTML.escape($0.key), "\($0.value)"] }, numeric: [1])
        }
        if !accepted.isEmpty {
            s += "<h3>Accepted pairs</h3>"
            let rows = accepted.sorted { ($0.download?.bytes ?? 0, $0.upload?.bytes ?? 0) > ($1.download?.bytes ?? 0, $1.upload?.bytes ?? 0) }
                .prefix(500).map { p -> [String] in
                    [HTML.escape(p.resolver), (p.transport ?? .udp).rawValue, HTML.escape(p.domain), HTML.escape(p.vantage ?? run.vantage),
                     "\(p.upload?.bytes ?? 0)", "\(p.upload?.qnameChars ?? 0)", "\(p.download?.bytes ?? 0)",
                     "\(p.download?.responseSize ?? 0)", HTML.escape(p.download?.limitText ?? "–"),
                     p.download?.limitingLeg?.rawValue ?? "–", HTML.number(p.rttMs),
                     p.confirmation.map { "\($0.succeeded)/\($0.sent)" } ?? "–",
                     p.lossExceeded == true ? HTML.badge(p.lossText, .bad) : HTML.escape(p.lossText)]
                }
            s += HTML.table(["resolver", "transport", "domain", "vantage", "up B", "QNAME", "down B", "response B", "down limited by",
                             "limiting leg", "RTT ms", "confirmed", "loss (95 % Wilson)"],
                            Array(rows), numeric: [4, 5, 6, 7, 10, 11])
            let lossy = accepted.filter { $0.lossExceeded == true }.count
            if lossy > 0, let maxLoss = settings.maxLoss {
                s += "<p class=\"notice\"><b>\(lossy) pair(s) lost more than \(HTML.formatFixed(maxLoss * 100, decimals: 0)) % of their confirmation probes</b> (--max-loss): left out of the synced MTU and the engine figures and exports.</p>"
            }
        }
        if !input.listIssues.isEmpty {
            s += "<h3>Resolver list lines skipped</h3><ul>" + input.listIssues.prefix(50).map { "<li>\(HTML.escape($0))</li>" }.joined() + "</ul>"
        }
        return s + "</section>"
    }
}
