public import Results
extension ResilienceResult {
    /// The resilience section: the summary and every note (`summaryLines`, `allNotes`), cycles, one
    /// chart per scenario (answered probes per 500 ms, the disruption's bins highlighted) and the
    /// leak evidence.
    public func htmlSection() -> String {
        var s = "<section id=\"resilience\"><h2>Tunnel resilience</h2>"
        let tone: HTML.Tone = verdict == .pass ? .ok : (verdict == .incomplete ? .warn : .bad)
        s += "<p>\(HTML.badge(verdict.rawValue.uppercased(), tone)) \(HTML.escape(engine)) with profile “\(HTML.escape(profile))”</p>"
        if let line = socksLine { s += "<p>\(HTML.escape(line))</p>" }
        // The summary first, then every note of the run: no note is found only inside a section.
        let summary = summaryLines
        if !summary.isEmpty {
            s += "<h3>Summary</h3><ul>" + summary.map { "<li>\(HTML.escape($0))</li>" }.joined() + "</ul>"
        }
        let every = allNotes
        if !every.isEmpty {
            s += "<h3>Notes</h3><ul>" + every.map { "<li>\(HTML.escape($0))</li>" }.joined() + "</ul>"
        }
        if !cycles.isEmpty {
            s += "<h3>Cycles</h3>"
            let bridged = self.bridged
            s += HTML.table(["cycle", "ok", "handshake ms", "first data ms", "stop ms"] + (bridged ? ["bridge"] : []) + ["failure"], cycles.map {
                ["\($0.index)", $0.ok ? HTML.badge("ok", .ok) : HTML.badge("failed", .bad), Self.ms($0.handshakeMs),
                 Self.ms($0.firstDataMs), Self.ms($0.stopMs)] + (bridged ? [HTML.escape(Self.bridgeCell($0.bridge))] : [])
                    + [HTML.escape($0.failure ?? "")]
            }, numeric: [0, 2, 3, 4])
            if let leftovers {
                let items = leftovers.processes + leftovers.tunDevices + leftovers.routes + leftovers.sockets + leftovers.namespaces
                s += leftovers.clean ? "<p>\(HTML.badge("clean", .ok)) nothing accumulated over the cycles.</p>"
                    : "<p>\(HTML.badge("LEFTOVERS", .bad))</p><pre>\(HTML.escape(items.joined(separator: "\n")))</pre>"
            }
        }
        for (index, scenario) in scenarios.enumerated() {
            s += "<h3>\(HTML.escape(scenario.scenario)) (\(HTML.escape(scenario.engine)))</h3>"
            s += "<figure>"
            if scenario.probes.contains(where: { $0.atMs > Self.longestScenarioMs }) {
                s += "<p class=\"notice\">\(HTML.escape(CheckedNumber.invalid("scenarios[\(index)].probes[].atMs")))</p>"
            }
            s += SVGChart.columns(id: "resilience-\(index)", title: "Answered probes per 500 ms (disruption highlighted)",
                                  columns: Self.bins(scenario), xLabel: "seconds since the scenario started",
                                  yLabel: "answered", labelEvery: 4)
            let recovery = scenario.recoverySeconds.map { "recovered \(Self.seconds($0)) s after the disruption" }
                ?? (scenario.recoveryNote ?? "did not recover")
            let bridge = scenario.bridge.map { "; through the bridge (\(Self.bridgeCell($0)))" } ?? ""
            s += "<figcaption>\(HTML.escape(recovery)); \(scenario.requestsLost) of \(scenario.requestsSent) probes lost; \(scenario.reconnectAttempts) reconnect attempts\(scenario.reconnectStorm ? " (storm)" : "")\(HTML.escape(bridge)).</figcaption></figure>"
            if let failover = scenario.failover {
                let text = failover.failedOver
                    ? "\(failover.blockedResolver) taken down; failed over to \(failover.resolver ?? "?") after \(failover.afterMs.map(String.init) ?? "?") ms"
                    : "\(failover.blockedResolver) taken down; did not fail over to another profile resolver"
                s += "<p>\(failover.failedOver ? HTML.badge("failover", .ok) : HTML.badge("no failover", .bad)) \(HTML.escape(text))</p>"
            } else if let note = scenario.failoverNote {
                s += "<p>Failover not measured: \(HTML.escape(note)).</p>"
            }
            if scenario.leaked == true {
                s += HTML.table(["at ms", "leaked packet"], scenario.leakEvidence.prefix(100).map { ["\($0.atMs)", HTML.escape($0.summary)] }, numeric: [0])
            }
        }
        if let split {
            s += "<h3>Split tunnel</h3><p>\(split.ok ? HTML.badge("ok", .ok) : HTML.badge("MISROUTED", .bad)) \(HTML.escape(split.mode)) \(HTML.escape((split.prefixes + split.domains.map(\.name)).joined(separator: ", ")))</p>"
            if !split.domains.isEmpty {
                s += HTML.table(["domain", "side", "resolved by", "addresses"], split.domains.map {
                    [HTML.escape($0.name), $0.side, HTML.escape($0.server ?? "–"),
                     HTML.escape($0.addresses.isEmpty ? "none: \($0.note ?? "no answer")" : $0.addresses.joined(separator: ", "))]
                }, numeric: [])
            }
            let wrong = split.clearOnUplink.map { ("in clear on the uplink", $0) } + split.insideTunnel.map { ("inside the TUN", $0) }
            if !wrong.isEmpty {
                s += HTML.table(["where", "at ms", "packet"], wrong.prefix(100).map { [$0.0, "\($0.1.atMs)", HTML.escape($0.1.summary)] }, numeric: [1])
            }
        }
        return s + "</section>"
    }

    /// No scenario runs a day; a probe later than that is an edited file's.
    static let longestScenarioMs = 24 * 3_600_000

    /// Answered probes per 500 ms bin; a bin is highlighted when it overlaps the disruption.
    public static func bins(_ scenario: Scenario) -> [SVGChart.Column] {
        let width = 500
        let last = scenario.probes.map(\.atMs).max() ?? 0
        // A probe hours after the start (an edited file) would ask for millions of bins: none drawn.
        guard last >= 0, last <= longestScenarioMs, !scenario.probes.isEmpty else { return [] }
        var counts = [Int](repeating: 0, count: last / width + 1)
        for probe in scenario.probes where probe.ok && probe.atMs >= 0 { counts[probe.atMs / width] += 1 }
        return counts.enumerated().map { index, count in
            let start = index * width
            let overlaps = start < scenario.disruptionEndMs && start + width > scenario.disruptionStartMs
            return SVGChart.Column(label: HTML.formatFixed(Double(start) / 1000, decimals: 1), value: Double(count), highlighted: overlaps)
        }
    }
}
