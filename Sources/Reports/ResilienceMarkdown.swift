public import Results
extension ResilienceResult {
    /// resilience.md: verdict, the cycles and what they left, then one row per scenario.
    /// The page for people; `run` says which run it was.
    public func markdown(run: RunInfo) -> String {
        var lines: [String] = []
        lines.append("# resilience: \(profile) (\(engine))")
        lines.append("")
        lines.append("**Verdict: \(verdict)**")
        lines.append("")
        lines.append("Run `\(run.id)`, sandbox `\(sandbox)`, seed \(run.seed)\(run.complete ? "" : ", incomplete: \(run.interruption ?? "interrupted")").")
        if let socks, let line = socksLine {
            lines.append("")
            lines.append(line.replacingOccurrences(of: "proxy \(socks)", with: "proxy `\(socks)`"))
        }
        let summary = summaryLines
        if !summary.isEmpty {
            lines.append("")
            lines.append("## Summary")
            lines.append("")
            for line in summary { lines.append("- \(line)") }
        }
        if !cycles.isEmpty {
            lines.append("")
            lines.append("## Cycles")
            lines.append("")
            let bridgeColumn = bridged ? " bridge |" : ""
            lines.append("| cycle | ok | handshake (ms) | first data (ms) | stop (ms) |\(bridgeColumn) failure |")
            lines.append("|---:|---|---:|---:|---:|" + (bridged ? "---|" : "") + "---|")
            for c in cycles {
                let bridge = bridged ? " \(Self.cell(Self.bridgeCell(c.bridge))) |" : ""
                lines.append("| \(c.index) | \(c.ok ? "yes" : "no") | \(Self.ms(c.handshakeMs)) | \(Self.ms(c.firstDataMs)) | \(Self.ms(c.stopMs)) |\(bridge) \(Self.cell(c.failure ?? "")) |")
            }
            if let leftovers {
                lines.append("")
                if leftovers.clean {
                    lines.append("Nothing accumulated: no engine process after any stop; TUN devices, routes, sockets and namespaces after the last cycle are those after the first.")
                } else {
                    lines.append("**Left behind:**")
                    for (what, items) in [("process", leftovers.processes), ("TUN device", leftovers.tunDevices), ("route", leftovers.routes),
                                          ("socket", leftovers.sockets), ("namespace", leftovers.namespaces)] {
                        for item in items { lines.append("- \(what): `\(item)`") }
                    }
                }
            }
        }
        if !scenarios.isEmpty {
            lines.append("")
            lines.append("## Scenarios")
            lines.append("")
            lines.append("Recovery: from the end of the disruption to the answer of the first successful probe sent after it (probe flow: one HTTP GET every 100 ms through the tunnel).")
            lines.append("")
            lines.append("| scenario | engine | disruption (ms) | recovery (s) | sent | lost | reconnect attempts | restarted | leaked |" + (bridged ? " bridge |" : ""))
            lines.append("|---|---|---|---:|---:|---:|---:|---|---|" + (bridged ? "---|" : ""))
            for s in scenarios {
                let recovery = s.recoverySeconds.map { Self.seconds($0) } ?? (s.recoveryNote ?? "did not recover within \(Self.seconds(s.recoveryBoundSeconds)) s")
                let attempts = "\(s.reconnectAttempts)" + (s.reconnectStorm ? " (storm)" : "")
                let leaked = s.leaked.map { $0 ? "**yes** (\(s.leakEvidence.count) packets)" : "no" } ?? "not captured"
                let bridge = bridged ? " \(Self.cell(Self.bridgeCell(s.bridge))) |" : ""
                lines.append("| \(s.scenario) | \(s.engine) | \(s.disruptionStartMs)–\(s.disruptionEndMs) | \(recovery) | \(s.requestsSent) | \(s.requestsLost) | \(attempts) | \(s.engineRestarted ?? "no") | \(leaked) |\(bridge)")
            }
            for s in scenarios where !s.leakEvidence.isEmpty || !s.notes.isEmpty {
                lines.append("")
                lines.append("### \(s.scenario)")
                lines.append("")
                for note in s.notes { lines.append("- \(note)") }
                for packet in s.leakEvidence.prefix(50) { lines.append("- leaked at \(packet.atMs) ms: `\(packet.summary)`") }
            }
        }
        for s in scenarios where s.failover != nil || s.failoverNote != nil {
            if s.scenario == scenarios.first(where: { $0.failover != nil || $0.failoverNote != nil })?.scenario {
                lines.append("")
                lines.append("## Resolver failover")
                lines.append("")
            }
            if let f = s.failover {
                let moved = f.failedOver
                    ? "**failed over** to \(f.resolver ?? "?") \(f.afterMs.map { "\($0) ms" } ?? "?") after the outage began"
                    : "**did not fail over**: no tunnel query went to another profile resolver"
                let counts = f.queriesAfterStart.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
                lines.append("- \(s.scenario): \(f.blockedResolver) taken down; \(moved) (tunnel queries from the outage on: \(counts.isEmpty ? "none" : counts)).")
            } else if let note = s.failoverNote {
                lines.append("- \(s.scenario): not measured: \(note).")
            }
        }
        if let split {
            let listed = split.prefixes + split.domains.map(\.name)
            lines.append("")
            lines.append("## Split tunnel (\(split.mode) \(listed.joined(separator: ", ")))")
            lines.append("")
            lines.append("**\(split.ok ? "Routed as the profile says" : "MISROUTED")**: tunnelled probes \(split.tunnelledProbes.joined(separator: ", ")); direct probes \(split.directProbes.joined(separator: ", ")).")
            if !split.domains.isEmpty {
                lines.append("")
                lines.append("| domain | side | resolved by | addresses |")
                lines.append("|---|---|---|---|")
                for d in split.domains {
                    let addresses = d.addresses.isEmpty ? "none: \(d.note ?? "no answer")" : d.addresses.joined(separator: ", ")
                    lines.append("| \(Self.cell(d.name)) | \(d.side) | \(d.server ?? "–") | \(Self.cell(addresses)) |")
                }
                lines.append("")
            }
            for packet in split.clearOnUplink.prefix(50) {
                let what = packet.query != nil && packet.domain != nil ? "lookup of a tunnelled name in clear on the uplink" : "tunnelled destination in clear on the uplink"
                lines.append("- \(what) at \(packet.atMs) ms: `\(packet.summary)`")
            }
            for packet in split.insideTunnel.prefix(50) { lines.append("- direct destination inside the TUN at \(packet.atMs) ms: `\(packet.summary)`") }
            for note in split.notes { lines.append("- \(note)") }
        }
        if !notes.isEmpty {
            lines.append("")
            lines.append("## Notes")
            lines.append("")
            for note in notes { lines.append("- \(note)") }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func ms(_ value: Int?) -> String { value.map(String.init) ?? "–" }
    static func seconds(_ value: Double) -> String { HTML.formatFixed(value, decimals: 2) }
    static func cell(_ text: String) -> String { text.replacingOccurrences(of: "|", with: "\\|").replacingOccurrences(of: "\n", with: " ") }
}
