public import TraceAnalysis

/// What `tunnelprobe trace` found in one or more captures (`"schema": "tunnelprobe.trace/1"`).
public struct TraceReport: Codable, Sendable, Hashable {
    public static let schemaName = "tunnelprobe.trace/1"

    public var schema: String = TraceReport.schemaName
    public var run: RunInfo
    public var settings: Settings
    public var files: [File]
    public var packets: Packets
    /// Every resolver together.
    public var totals: TraceStats
    /// Per resolver (`ip:port` the queries went to), each with its per tunnel domain x record type groups.
    public var resolvers: [TraceStats]
    /// Domains seen, with the engine their traffic looks like.
    public var domains: [Domain]

    public typealias Settings = TraceSettings
    public typealias File = TraceFile
    public typealias Packets = TracePackets
    public typealias Domain = TraceDomain

    /// `trace.json` from what the analysis found.
    public init(_ result: TraceResult, run: RunInfo) {
        self.init(run: run, settings: result.settings, files: result.files, packets: result.packets, totals: result.totals,
                  resolvers: result.resolvers, domains: result.domains)
    }

    public init(run: RunInfo, settings: Settings, files: [File], packets: Packets, totals: TraceStats,
                resolvers: [TraceStats], domains: [Domain]) {
        self.run = run
        self.settings = settings
        self.files = files
        self.packets = packets
        self.totals = totals
        self.resolvers = resolvers
        self.domains = domains
    }




}
