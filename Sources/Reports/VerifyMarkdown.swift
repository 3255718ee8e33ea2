public import Results
extension VerifyResult {
    /// One line for the terminal.
    public var summaryLine: String {
        var text = "verify \(engine) \"\(profile)\": \(verdict.rawValue.uppercased())"
        if let reason { text += ": \(reason)" }
        text += " (start to verdict \(timing.startToVerdictMs) ms"
        if let handshake = timing.handshakeMs { text += ", handshake at \(handshake) ms" }
        return text + ")"
    }

    /// verify.md: the verdict first, then the phases, the checks with their evidence, diagnostics.
    /// The page for people; `run` says which run it was.
    public func markdown(run: RunInfo) -> String {
        var lines: [String] = []
        lines.append("# verify: \(profile) (\(engine)): \(verdict.rawValue.uppercased())" + (reason.map { ": \($0)" } ?? ""))
        lines.append("")
        lines.append("**Verdict: \(verdict)**" + (failure.map { " (failed at \($0.phase): \($0.reason))" } ?? ""))
        lines.append("")
        lines.append("Run `\(run.id)`, sandbox `\(sandbox)`, seed \(run.seed)\(run.complete ? "" : ", incomplete: \(run.interruption ?? "interrupted")").")
        lines.append("Start to verdict \(timing.startToVerdictMs) ms" + (timing.handshakeMs.map { "; handshake evidence at \($0) ms" } ?? "")
                     + (timing.afterHandshakeMs.map { "; data and checks \($0) ms after it" } ?? "") + ".")
        lines.append("")
        lines.append("## Phases")
        lines.append("")
        lines.append("| phase | started (ms) | took (ms) | ok | detail |")
        lines.append("|---|---:|---:|---|---|")
        for phase in phases {
            lines.append("| \(phase.name) | \(phase.startedMs) | \(phase.durationMs) | \(phase.ok ? "yes" : "no") | \(cell(phase.detail ?? "")) |")
        }
        if let failure, !failure.engineWords.isEmpty {
            lines.append("")
            lines.append("The engine's last words" + (failure.exitCode.map { " (exit status \($0))" } ?? "") + ":")
            lines.append("")
            lines.append("```")
            lines += failure.engineWords
            lines.append("```")
        }
        lines.append("")
        lines.append("## Checks")
        lines.append("")
        lines.append("| check | result | detail |")
        lines.append("|---|---|---|")
        let exitResult = exitIP.ok.map { $0 ? "pass" : "FAIL" } ?? "not measured"
        lines.append("| exit IP | \(exitResult) | observed \(exitIP.observed ?? "-"), expected \(exitIP.expected ?? "-")\(exitIP.note.map { "; \($0)" } ?? "") |")
        lines.append("| DNS leak | \(leakWord(dnsLeak.requested, dnsLeak.leaked)) | \(dnsLeak.names.count) unique names via \(dnsLeak.servers.joined(separator: ", ")), \(dnsLeak.answered) answered\(dnsLeak.note.map { "; \($0)" } ?? "") |")
        lines.append("| IPv6 leak | \(leakWord(ipv6Leak.requested, ipv6Leak.leaked)) | \(ipv6Leak.note ?? "\(ipv6Leak.evidence.count) IPv6 packets outside the tunnel") |")
        lines.append("| tunnel failure | \(leakWord(tunnelFailure.requested, tunnelFailure.leaked)) | \(tunnelFailure.note ?? "engine killed; \(tunnelFailure.evidence.count) packets escaped") |")
        if let seen = dnsLeak.resolversSeen {
            lines.append("")
            lines.append("The responder's leak zone saw these resolvers ask for the unique names: \(seen.isEmpty ? "none" : seen.joined(separator: ", "))"
                         + ((dnsLeak.unexpectedResolvers ?? []).isEmpty ? "." : "; not expected: \(dnsLeak.unexpectedResolvers!.joined(separator: ", ")).")
            )
        }
        for (title, evidence) in [("DNS queries around the tunnel", dnsLeak.evidence), ("IPv6 packets around the tunnel", ipv6Leak.evidence),
                                  ("Packets that escaped after the engine died", tunnelFailure.evidence)] where !evidence.isEmpty {
            lines.append("")
            lines.append("### \(title)")
            lines.append("")
            for packet in evidence.prefix(50) { lines.append("- `\(packet.summary)`") }
            if evidence.count > 50 { lines.append("- ... \(evidence.count - 50) more in verify.json") }
        }
        if let capture {
            lines.append("")
            lines.append("## Uplink capture (\(capture.interface))")
            lines.append("")
            if let file = capture.file { lines.append("Every frame that left the sandbox is in `\(file)`.") ; lines.append("") }
            lines.append("\(capture.packets) packets left the sandbox: \(capture.carrier) carrier, \(capture.linkControl) link upkeep (ARP, ND, MLD), \(capture.nonCarrier.count) other.")
        }
        lines.append("")
        lines.append("## Diagnostics")
        lines.append("")
        lines.append("- phase: \(diagnostics.phase)")
        lines.append("- selected resolver: \(diagnostics.selectedResolver ?? "-")")
        lines.append("- session: \(diagnostics.session ?? "-")")
        lines.append("- TUN address: \(diagnostics.tunAddress ?? "-")")
        lines.append("- TUN packets up/down: \(diagnostics.tunPacketsUp.map(String.init) ?? "-") / \(diagnostics.tunPacketsDown.map(String.init) ?? "-")")
        if !diagnostics.routeLoops.isEmpty { lines.append("- route loops: \(diagnostics.routeLoops.joined(separator: ", "))") }
        for error in diagnostics.errors { lines.append("- error: \(error)") }
        if let engineDiagnostics = diagnostics.engine {
            lines.append("")
            lines.append("## Engine diagnostics (\(engine))")
            lines.append("")
            for row in engineDiagnostics.rows {
                lines.append("- \(row.label): \(row.value ?? "null (\(row.why ?? "not exposed"))")")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private func leakWord(_ requested: Bool, _ leaked: Bool?) -> String {
        guard requested else { return "not requested" }
        guard let leaked else { return "not measured" }
        return leaked ? "LEAK" : "pass"
    }

    private func cell(_ text: String) -> String { text.replacingOccurrences(of: "|", with: "\\|") }
}
