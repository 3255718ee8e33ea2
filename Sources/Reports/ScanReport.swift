/// `scan.json`: one entry per resolver-domain pair, the synced MTU over accepted pairs, and how it was run.
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
    /// The scans a merged report was made from (`report merge`), nil for a scan of one vantage point.
    public var mergedFrom: [RunInfo]?

    public init(run: RunInfo, settings: ScanSettings, input: InputSummary, pairs: [ScanPair], synced: Synced,
                optimized: Optimized?, summary: Summary) {
        self.run = run
        self.settings = settings
        self.input = input
        self.pairs = pairs
        self.synced = synced
        self.optimized = optimized
        self.summary = summary
    }

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
        /// Bytes of tunnel framing subtracted from `upload.bytes` (0: raw capacity of the name).
        public var frameOverhead: Int
        public var ednsSize: Int

        public init(domains: [String], encoding: String, recordType: String, timeoutMs: Int, attempts: Int,
                    concurrency: Int, perResolverQPS: Double, confirmProbes: Int, minValid: Int?,
                    uploadCharacters: ClosedRangeInt, downloadBytes: ClosedRangeInt, frameOverhead: Int, ednsSize: Int) {
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

    public struct Synced: Codable, Sendable, Hashable {
        /// Minimum over accepted pairs (MasterDnsVPN's synced MTU), nil when none was accepted.
        public var upload: Int?
        public var download: Int?
        public var uploadQnameChars: Int?
        public var downloadResponseSize: Int?
        public init(upload: Int? = nil, download: Int? = nil, uploadQnameChars: Int? = nil, downloadResponseSize: Int? = nil) {
            self.upload = upload
            self.download = download
            self.uploadQnameChars = uploadQnameChars
            self.downloadResponseSize = downloadResponseSize
        }
    }

    public struct Optimized: Codable, Sendable, Hashable {
        public var upload: Int
        public var download: Int
        /// The pairs the optimizer would drop ("ip:port domain") and what that costs.
        public var dropped: [String]
        public var rule: String
        public init(upload: Int, download: Int, dropped: [String], rule: String) {
            self.upload = upload
            self.download = download
            self.dropped = dropped
            self.rule = rule
        }
    }

    public struct Summary: Codable, Sendable, Hashable {
        public var pairs: Int
        public var accepted: Int
        public var rejected: Int
        /// Pairs never tested: the run was interrupted or `--min-valid` stopped it early.
        public var notTested: Int
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
    }
}

/// One resolver-domain pair.
public struct ScanPair: Codable, Sendable, Hashable {
    public var resolver: String
    public var domain: String
    public var accepted: Bool
    /// The stage that rejected the pair: reachability, honesty, upload, download, confirmation.
    public var stage: String?
    /// Why it was rejected, e.g. "download: TC bit set at every size".
    public var reason: String?
    /// The failure class: timeout, tc, servfail, refused, formerr, nxdomain, rewritten, wrongSize, caseChanged, ...
    public var failure: String?
    public var upload: Upload?
    public var download: Download?
    /// Median round-trip time of the pair's answered probes.
    public var rttMs: Double?
    public var confirmation: Confirmation?
    public var queries: Int
    /// Where this pair was measured, set when scans from several vantage points are merged.
    public var vantage: String?

    public init(resolver: String, domain: String, accepted: Bool, stage: String? = nil, reason: String? = nil,
                failure: String? = nil, upload: Upload? = nil, download: Download? = nil, rttMs: Double? = nil,
                confirmation: Confirmation? = nil, queries: Int = 0, vantage: String? = nil) {
        self.resolver = resolver
        self.domain = domain
        self.accepted = accepted
        self.stage = stage
        self.reason = reason
        self.failure = failure
        self.upload = upload
        self.download = download
        self.rttMs = rttMs
        self.confirmation = confirmation
        self.queries = queries
        self.vantage = vantage
    }

    public struct Upload: Codable, Sendable, Hashable {
        /// Payload bytes one query carries (the name's capacity in `encoding`, less any frame overhead).
        public var bytes: Int
        /// Text length of the longest QNAME that arrived intact.
        public var qnameChars: Int
        public var payloadChars: Int
        public var encoding: String
        /// What failed just above the chosen size (nil when the largest size tried passed).
        public var limitedBy: String?
        /// The resolver changed letter case on the way (harmless for case-insensitive encodings).
        public var caseChanged: Bool
        public init(bytes: Int, qnameChars: Int, payloadChars: Int, encoding: String, limitedBy: String?, caseChanged: Bool) {
            self.bytes = bytes
            self.qnameChars = qnameChars
            self.payloadChars = payloadChars
            self.encoding = encoding
            self.limitedBy = limitedBy
            self.caseChanged = caseChanged
        }
    }

    public struct Download: Codable, Sendable, Hashable {
        /// Payload bytes one response carries in `recordType`.
        public var bytes: Int
        /// Size in bytes of the largest DNS response message that arrived intact.
        public var responseSize: Int
        public var recordType: String
        public var limitedBy: String?
        public init(bytes: Int, responseSize: Int, recordType: String, limitedBy: String?) {
            self.bytes = bytes
            self.responseSize = responseSize
            self.recordType = recordType
            self.limitedBy = limitedBy
        }
    }

    public struct Confirmation: Codable, Sendable, Hashable {
        public var sent: Int
        public var succeeded: Int
        public var ratio: Double
        public init(sent: Int, succeeded: Int) {
            self.sent = sent
            self.succeeded = succeeded
            self.ratio = sent == 0 ? 0 : Double(succeeded) / Double(sent)
        }
    }
}
