import Foundation
import Results

extension ScanEndToEnd {
    /// The Markdown section of scan.md.
    func markdown() -> [String] {
        var out = ["## End to end through \(engine)", ""]
        out.append("The best \(requested) accepted pair(s) (\(selection)), each with the real engine pinned to that one resolver: handshake, first data (\(firstDataURL)), then \(bulkBytes.map { "\($0) bytes from \(bulkURL ?? "-")" } ?? "no bulk download"). Ranked by goodput.")
        out.append("")
        if let engineDomain { out += [domainSentence(engineDomain), ""] }
        if let note { out += ["> \(note)", ""] }
        guard !runs.isEmpty else { return out + ["No pair was run end to end.", ""] }
        out.append("| rank | resolver | domain | end to end | handshake ms | first data ms | bulk TTFB ms | bulk bytes | goodput B/s | why not |")
        out.append("|---:|---|---|---|---:|---:|---:|---:|---:|---|")
        func f(_ v: Double?) -> String { v.map { String(format: "%.0f", $0) } ?? "-" }
        for run in runs {
            let why = run.ok ? "" : "\(run.reason ?? "failed")" + (run.engineWords.isEmpty ? "" : " — engine: `\(run.engineWords.first!.replacingOccurrences(of: "|", with: "\\|"))`")
            out.append("| \(run.rank.map(String.init) ?? "-") | \(run.resolver) | \(run.domain) | \(run.ok ? "ok" : "**failed**\(run.failedPhase.map { " at \($0)" } ?? "")") | \(run.handshakeMs.map(String.init) ?? "-") | \(run.firstDataMs.map(String.init) ?? "-") | \(f(run.timeToFirstByteMs)) | \(run.bulkBytes.map(String.init) ?? "-") | \(f(run.goodputBytesPerSecond)) | \(why) |")
        }
        out.append("")
        out.append("Definitions: handshake = engine start to the engine's handshake evidence; first data = handshake to the first HTTP answer through the tunnel; bulk TTFB = the bulk request's send to its first response byte; goodput = body bytes received over the time from the request's send to the last body byte (RFC 2647 3.17: bits delivered per unit of time, lost and retransmitted ones excluded).")
        out.append("")
        return out
    }

    /// Which domain the engine used when it was not each pair's (`--e2e-domain profile`).
    func domainSentence(_ engineDomain: String) -> String {
        "The engine ran on the profile's tunnel domain \(engineDomain) through each pair's resolver; the domain column is the probe domain the scan measured that resolver on (--e2e-domain profile)."
    }

    /// The HTML section of the scan page.
    func html() -> String {
        var s = "<h3>End to end through \(HTML.escape(engine))</h3>"
        s += "<p>The best \(requested) accepted pair(s) (\(HTML.escape(selection))), each with the real engine pinned to that one resolver: handshake, first data, then \(bulkBytes.map { "\($0) bytes from \(HTML.escape(bulkURL ?? "-"))" } ?? "no bulk download"). Ranked by goodput (RFC 2647 3.17).</p>"
        if let engineDomain { s += "<p>\(HTML.escape(domainSentence(engineDomain)))</p>" }
        if let note { s += "<p class=\"notice\">\(HTML.escape(note))</p>" }
        let passing = runs.filter { $0.ok && $0.goodputBytesPerSecond != nil }
        if !passing.isEmpty {
            let bars = passing.map { SVGChart.Bar(label: $0.resolver, value: $0.goodputBytesPerSecond ?? 0) }
            s += "<figure>" + SVGChart.bars(id: "scan-e2e-goodput", title: "Goodput through the tunnel per resolver (bytes per second)",
                                            bars: bars, unit: "B/s") + "</figure>"
        }
        let rows = runs.map { run -> [String] in
            let words = run.engineWords.first.map { " <code>\(HTML.escape($0))</code>" } ?? ""
            return ["\(run.rank.map(String.init) ?? "–")", HTML.escape(run.resolver), HTML.escape(run.domain),
                    run.ok ? HTML.badge("ok", .ok) : HTML.badge("failed" + (run.failedPhase.map { " at \($0)" } ?? ""), .bad),
                    run.handshakeMs.map(String.init) ?? "–", run.firstDataMs.map(String.init) ?? "–",
                    HTML.number(run.timeToFirstByteMs, decimals: 0), run.bulkBytes.map(String.init) ?? "–",
                    HTML.number(run.goodputBytesPerSecond, decimals: 0),
                    run.ok ? "" : HTML.escape(run.reason ?? "failed") + words]
        }
        s += HTML.table(["rank", "resolver", "domain", "end to end", "handshake ms", "first data ms", "bulk TTFB ms", "bulk bytes",
                         "goodput B/s", "why not"], rows, numeric: [0, 4, 5, 6, 7, 8])
        return s
    }
}
