public import TunnelVerify

/// `resilience.json` (`"schema": "tunnelprobe.resilience/1"`, docs/RESILIENCE.md): the run, then the
/// fields of `ResilienceResult`.
public typealias ResilienceReport = ResultDocument<ResilienceResult>

extension ResilienceResult: ReportResult {
    public static let schemaName = "tunnelprobe.resilience/1"
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
    }}

extension ResultDocument where Result == ResilienceResult {
    public var summaryLine: String { result.summaryLine }
    public func markdown() -> String { result.markdown(run: run) }
    public func htmlSection() -> String { result.htmlSection() }
}
