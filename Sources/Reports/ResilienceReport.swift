public import Results

/// `resilience.json` (`"schema": "tunnelprobe.resilience/2"`, docs/RESILIENCE.md): the run, then the
/// fields of `ResilienceResult`. /2 added the packet-flow bridge of each cycle and scenario
/// (`bridge`); /1 files still load (the field is absent there, read as null).
public typealias ResilienceReport = ResultDocument<ResilienceResult>

extension ResilienceResult: ReportResult {
    public static let schemaName = "tunnelprobe.resilience/2"
}

extension ResilienceResult {
    public var summaryLine: String {
        var parts: [String] = []
        if !cycles.isEmpty {
            parts.append("cycles \(cycles.filter(\.ok).count)/\(cycles.count) passed" + (leftovers.map { $0.clean ? ", nothing left behind" : ", LEFTOVERS" } ?? ""))
        }
        if !scenarios.isEmpty { parts.append("scenarios recovered \(scenarios.filter { $0.recoverySeconds != nil }.count)/\(scenarios.count)") }
        if let split { parts.append(split.ok ? "split routed as declared" : "split MISROUTED") }
        return "\(engine): \(verdict)" + (parts.isEmpty ? "" : "; " + parts.joined(separator: "; "))
    }
}

extension ResilienceResult {
    /// What the run found, one line per finding: the cycles, each failed cycle, each scenario's
    /// recovery (or why none) and leak, the split. The first thing the page shows.
    public var summaryLines: [String] {
        var lines: [String] = []
        if !cycles.isEmpty {
            let passed = cycles.filter(\.ok).count
            let left = leftovers.map { $0.clean ? "; nothing accumulated" : "; something was left behind" } ?? ""
            lines.append("cycles: \(passed) of \(cycles.count) passed\(left)")
            for cycle in cycles where !cycle.ok { lines.append("cycle \(cycle.index): \(cycle.failure ?? "failed")") }
        }
        for s in scenarios {
            let recovery = s.recoverySeconds.map { "recovered in \(Self.seconds($0)) s" }
                ?? (s.recoveryNote ?? "did not recover within \(Self.seconds(s.recoveryBoundSeconds)) s")
            let leaked = s.leaked == true ? "; leaked \(s.leakEvidence.count) packet\(s.leakEvidence.count == 1 ? "" : "s")" : ""
            lines.append("\(s.scenario): \(recovery)\(leaked)")
        }
        if let split { lines.append("split: " + (split.ok ? "routed as the profile says" : "misrouted")) }
        return lines
    }

    /// Every note of the run, each named by where it came from: the run's own, each scenario's
    /// (its failover note too) and the split check's. Sections of the page hold them too; here
    /// none is missed.
    public var allNotes: [String] {
        var all = notes
        for s in scenarios {
            all += s.notes.map { "\(s.scenario): \($0)" }
            if let note = s.failoverNote { all.append("\(s.scenario): failover not measured: \(note)") }
        }
        all += split?.notes.map { "split: \($0)" } ?? []
        return all
    }
}

extension ResilienceResult {
    /// Whether any start went through the packet-flow bridge (MasterDnsVPN's redsocks bridge).
    public var bridged: Bool { cycles.contains { $0.bridge != nil } || scenarios.contains { $0.bridge != nil } }

    /// How the probes reached the SOCKS5 proxy, in one sentence for the page and the Markdown.
    public var socksLine: String? {
        guard let socks else { return nil }
        return bridged
            ? "SOCKS-shaped engine behind the packet-flow bridge: first data and probes were the sandbox's own TCP connections, which the bridge (redsocks, started with each engine start) carried into its SOCKS5 proxy \(socks)."
            : "SOCKS-shaped engine: first data and probes went through its SOCKS5 proxy \(socks)."
    }

    /// A bridge phase in a table cell: its set-up time, or why it failed; "–" without one.
    public static func bridgeCell(_ phase: VerifyResult.Phase?) -> String {
        guard let phase else { return "–" }
        return phase.ok ? "\(phase.durationMs) ms" : "failed: \(phase.detail ?? "?")"
    }
}

extension ResultDocument where Result == ResilienceResult {
    public var summaryLine: String { result.summaryLine }
    public func markdown() -> String { result.markdown(run: run) }
    public func htmlSection() -> String { result.htmlSection() }
}
