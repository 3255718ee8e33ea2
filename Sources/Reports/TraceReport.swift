public import Results

/// What `tunnelprobe trace` found in one or more captures (`"schema": "tunnelprobe.trace/3"`):
/// the run, then the analysis' `TraceResult` fields. Version 2 adds `snapTruncated` to every stats
/// object; version 1 files still load (the field is then absent).
public typealias TraceReport = ResultDocument<TraceResult>

extension TraceResult: ReportResult {
    public static let schemaName = "tunnelprobe.trace/3"
}
