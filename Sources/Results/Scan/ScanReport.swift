/// `scan.json`: one entry per resolver-domain pair, the synced MTU over accepted pairs, and how it was run.
///
/// Schema 1 readers still read it: version 1 added only optional keys (`loss`, `lossExceeded`,
/// `upstreamEDNS`, `download.upstreamEDNS`, `settings.maxLoss`, `settings.edns`, `summary.lossExceeded`) and new
/// `limitedBy` values (`upstreamEDNS`, `recordType`, `loss`), then the engine figures (`engines`,
/// `settings.engines`, `settings.recordTypes`, `pairs[].downloads`, `pairs[].downloadFailures`);
/// `settings.frameOverhead` is no longer written (engine framing lives in the engine models).
public struct ScanReport: Codable, Sendable, Hashable {
    public static let schemaName = "tunnelprobe.scan/1"

    public var schema: String = ScanReport.schemaName
    public var run: RunInfo
    public var settings: ScanSettings
    public var input: InputSummary
    public var pairs: [ScanPair]
    public var synced: Synced
    /// MasterDnsVPN-style outlier optimizer: what dropping the slowest resolvers would gain, kept apart.
    public var optimized: Optimized?
    public var summary: Summary
    /// Every engine the scan was asked about (`--engine`): each usable pair and the synced values in
    /// that engine's own units, with the texts it reads. Nil in reports made before engine models.
    public var engines: [EngineScan]?
    /// The scans a merged report was made from (`report merge`), nil for a scan of one vantage point.
    public var mergedFrom: [RunInfo]?
    /// `scan --e2e`: the real engine through each of the best accepted pairs, ranked by goodput
    /// (ScanEndToEnd.swift); nil without --e2e.
    public var endToEnd: ScanEndToEnd?
    /// What the scan's congestion window did (AIMD on the queries in flight, RFC 5681 3.1); nil
    /// without congestion control and in reports made before it.
    public var congestion: CongestionWindowStats?
    /// `scan --server masterdnsvpn`: the probes were the engine's own MTU-test requests to the
    /// user's server (the figures are the engine's, measured); nil for a scan of `serve`.
    public var server: ScanServerProbing?

    public init(run: RunInfo, settings: ScanSettings, input: InputSummary, pairs: [ScanPair], synced: Synced,
                optimized: Optimized?, summary: Summary, engines: [EngineScan]? = nil) {
        self.engines = engines
        self.run = run
        self.settings = settings
        self.input = input
        self.pairs = pairs
        self.synced = synced
        self.optimized = optimized
        self.summary = summary
    }

    public typealias Synced = SyncedSizes
    public typealias Optimized = OptimizedSizes

    public struct ScanSettings: Codable, Sendable, Hashable {
        public var domains: [String]
        public var encoding: String
        public var recordType: String
        public var timeoutMs: Int
        public var attempts: Int
        public var concurrency: Int
        public var perResolverQPS: Double
        public var confirmProbes: Int
        public var minValid: Int?
        public var uploadCharacters: ClosedRangeInt
        public var downloadBytes: ClosedRangeInt
        /// Bytes of tunnel framing once subtracted from `upload.bytes`; read from old reports, no longer
        /// written (each engine model knows its own framing).
        public var frameOverhead: Int?
        /// Every record type measured (`--record-type`), the first being `recordType`; nil in old reports.
        public var recordTypes: [String]?
        /// The engines whose figures the report carries (`--engine`); nil in old reports.
        public var engines: [String]?
        public var ednsSize: Int
        /// Pairs whose confirmation loss ratio is above this are left out of the exports and the
        /// synced MTU (`--max-loss`); nil in reports made before the flag.
        public var maxLoss: Double?
        /// What download probes asked of the responder's EDNS handling (`--edns`: server, honor,
        /// ignore); nil in reports made before the flag.
        public var edns: String?

        public init(domains: [String], encoding: String, recordType: String, timeoutMs: Int, attempts: Int,
                    concurrency: Int, perResolverQPS: Double, confirmProbes: Int, minValid: Int?,
                    uploadCharacters: ClosedRangeInt, downloadBytes: ClosedRangeInt, frameOverhead: Int? = nil, ednsSize: Int,
                    maxLoss: Double? = nil) {
            self.maxLoss = maxLoss
            self.domains = domains
            self.encoding = encoding
            self.recordType = recordType
            self.timeoutMs = timeoutMs
            self.attempts = attempts
            self.concurrency = concurrency
            self.perResolverQPS = perResolverQPS
            self.confirmProbes = confirmProbes
            self.minValid = minValid
            self.uploadCharacters = uploadCharacters
            self.downloadBytes = downloadBytes
            self.frameOverhead = frameOverhead
            self.ednsSize = ednsSize
        }
    }

    public struct ClosedRangeInt: Codable, Sendable, Hashable {
        public var min: Int
        public var max: Int
        public init(min: Int, max: Int) {
            self.min = min
            self.max = max
        }
    }

    public struct InputSummary: Codable, Sendable, Hashable {
        public var resolvers: Int
        /// Resolver list lines that were skipped or cut, with file and line number.
        public var listIssues: [String]
        public init(resolvers: Int, listIssues: [String]) {
            self.resolvers = resolvers
            self.listIssues = listIssues
        }
    }

    public struct Summary: Codable, Sendable, Hashable {
        public var pairs: Int
        public var accepted: Int
        public var rejected: Int
        /// Pairs never tested: the run was interrupted or `--min-valid` stopped it early.
        public var notTested: Int
        /// Accepted pairs whose confirmation loss is above `settings.maxLoss` (left out of the exports).
        public var lossExceeded: Int?
        public var rejectedBy: [String: Int]
        public var queries: Int
        public var durationSeconds: Double
        public init(pairs: Int, accepted: Int, rejected: Int, notTested: Int, rejectedBy: [String: Int], queries: Int,
                    durationSeconds: Double) {
            self.pairs = pairs
            self.accepted = accepted
            self.rejected = rejected
            self.notTested = notTested
            self.rejectedBy = rejectedBy
            self.queries = queries
            self.durationSeconds = durationSeconds
        }

        /// The counts of a list of pairs, the same for one scan and for a merge of several: rejections by
        /// "stage: failure", and accepted pairs over the loss threshold.
        public init(of pairs: [ScanPair], notTested: Int, queries: Int, durationSeconds: Double) {
            let rejected = pairs.filter { !$0.accepted }
            self.init(pairs: pairs.count, accepted: pairs.count - rejected.count, rejected: rejected.count, notTested: notTested,
                      rejectedBy: Dictionary(grouping: rejected, by: { "\($0.stage?.rawValue ?? "?"): \($0.failure?.rawValue ?? "?")" }).mapValues(\.count),
                      queries: queries, durationSeconds: durationSeconds)
            lossExceeded = pairs.filter { $0.accepted && $0.lossExceeded == true }.count
        }
    }
}
