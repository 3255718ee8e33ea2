public import TraceAnalysis

/// What `tunnelprobe trace` found in one or more captures (`"schema": "tunnelprobe.trace/1"`):
/// the run, then the analysis' `TraceResult` fields.
public typealias TraceReport = ResultDocument<TraceResult>

extension TraceResult: ReportResult {
    public static let schemaName = "tunnelprobe.trace/1"
}
