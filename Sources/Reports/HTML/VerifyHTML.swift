public import Results
extension VerifyResult {
    /// The verification section: verdict, phase timeline, exit IP and the itemized leak evidence.
    public func htmlSection() -> String {
        var s = "<section id=\"verify\"><h2>Tunnel verification</h2>"
        let tone: HTML.Tone = verdict == .pass ? .ok : (verdict == .incomplete ? .warn : .bad)
        s += "<p>\(HTML.badge(verdict.rawValue.uppercased(), tone)) \(HTML.escape(engine)) with profile “\(HTML.escape(profile))”"
        if let failure {
            s += ": failed at <b>\(HTML.escape(failure.phase))</b> — \(HTML.escape(failure.reason))"
        } else if let reason {
            s += " — \(HTML.escape(reason))"
        }
        s += "</p>"
        if let failure, !failure.engineWords.isEmpty {
            s += "<pre>\(HTML.escape(failure.engineWords.joined(separator: "\n")))</pre>"
        }
        s += "<figure>" + SVGChart.timeline(id: "verify-phases", title: "Phases (ms since start)",
                                           spans: phases.map { .init(name: $0.name, start: Double($0.startedMs), duration: Double($0.durationMs), ok: $0.ok) })
        s += "<figcaption>Start to verdict \(timing.startToVerdictMs) ms; handshake at \(timing.handshakeMs.map(String.init) ?? "–") ms; checks after the handshake \(timing.afterHandshakeMs.map(String.init) ?? "–") ms.</figcaption></figure>"
        func leak(_ leaked: Bool?) -> String {
            guard let leaked else { return HTML.badge("not run", .neutral) }
            return leaked ? HTML.badge("LEAK", .bad) : HTML.badge("none", .ok)
        }
        s += HTML.facts([
            ("Handshake", handshakeBadge + " " + HTML.escape(handshake.evidence ?? "")),
            ("Exit IP", "observed \(HTML.escape(exitIP.observed ?? "–")), expected \(HTML.escape(exitIP.expected ?? "–")) "
                + (exitIP.ok.map { $0 ? HTML.badge("ok", .ok) : HTML.badge("wrong", .bad) } ?? HTML.badge("not verified", .warn))
                + (exitIP.note.map { " " + HTML.escape($0) } ?? "")),
            ("DNS leak", leak(dnsLeak.leaked) + (dnsLeak.note.map { " " + HTML.escape($0) } ?? "")),
            ("DNS through the tunnel", dnsLeak.resolves.map { $0 ? HTML.badge("resolves", .ok) : HTML.badge("BROKEN", .bad) } .map {
                $0 + " \(dnsLeak.answered) of \(dnsLeak.names.count) names answered"
            } ?? HTML.badge("not run", .neutral)),
            ("IPv6 leak", leak(ipv6Leak.leaked) + (ipv6Leak.note.map { " " + HTML.escape($0) } ?? "")),
            ("Tunnel failure", leak(tunnelFailure.leaked) + (tunnelFailure.note.map { " " + HTML.escape($0) } ?? "")),
        ])
        if let engineDiagnostics = diagnostics.engine {
            s += "<h3 id=\"verify-engine\">Engine diagnostics</h3>"
            s += HTML.facts(engineDiagnostics.rows.map { row in
                (row.label, row.value.map(HTML.escape) ?? (HTML.badge("null", .neutral) + " " + HTML.escape(row.why ?? "not exposed")))
            })
        }
        let evidence = [("DNS", dnsLeak.evidence), ("IPv6", ipv6Leak.evidence), ("tunnel failure", tunnelFailure.evidence)]
            .flatMap { label, packets in packets.map { (label, $0) } }
        s += "<h3 id=\"verify-evidence\">Leak evidence</h3>"
        if evidence.isEmpty {
            s += "<p class=\"muted\">No packet left the sandbox outside the tunnel's carrier\(capture.map { " (\($0.packets) packets captured on \(HTML.escape($0.interface)), \($0.carrier) carrier)" } ?? "").</p>"
        } else {
            s += HTML.table(["check", "at ms", "packet"], evidence.prefix(200).map { [HTML.escape($0.0), "\($0.1.atMs)", HTML.escape($0.1.summary)] }, numeric: [1])
        }
        return s + "</section>"
    }

    /// "failed" only when the handshake is the phase that failed; "not reached" when an earlier phase did.
    var handshakeBadge: String {
        if handshake.ok { return HTML.badge("ok", .ok) }
        return failure?.phase == "handshake" ? HTML.badge("failed", .bad) : HTML.badge("not reached", .neutral)
    }
}
