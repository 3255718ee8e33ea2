public import Results

/// What `tunnelprobe trace` found in one or more captures (`"schema": "tunnelprobe.trace/3"`):
/// the run, then the analysis' `TraceResult` fields. Version 2 adds `snapTruncated` to every stats
/// object; version 3 writes an RTT figure nobody measured as null (the shared `Percentiles`); version
/// 1 and 2 files still load.
public typealias TraceReport = ResultDocument<TraceResult>

extension TraceResult: ReportResult {
    public static let schemaName = "tunnelprobe.trace/3"
}
