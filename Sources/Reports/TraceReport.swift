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

    public struct Settings: Codable, Sendable, Hashable {
        /// RFC 7680 Tmax: a query without a response within it is lost.
        public var tmaxMs: Double
        /// How long after Tmax a response still counts as late (and not as unmatched).
        public var lateWindowMs: Double
        public var filter: String?
        public var dnsPorts: [Int]
        /// Labels at least this long are taken as encoded tunnel data (tunnel-domain grouping).
        public var encodedLabelMin: Int

        public init(tmaxMs: Double, lateWindowMs: Double, filter: String?, dnsPorts: [Int], encodedLabelMin: Int) {
            self.tmaxMs = tmaxMs
            self.lateWindowMs = lateWindowMs
            self.filter = filter
            self.dnsPorts = dnsPorts
            self.encodedLabelMin = encodedLabelMin
        }
    }

    public struct File: Codable, Sendable, Hashable {
        public var path: String
        public var format: String?
        public var linkType: String?
        public var records: Int
        /// Set when the file could not be read to its end: what and where. Records before it are analysed.
        public var error: String?
        public var errorOffset: Int?

        public init(path: String, format: String?, linkType: String?, records: Int, error: String? = nil, errorOffset: Int? = nil) {
            self.path = path
            self.format = format
            self.linkType = linkType
            self.records = records
            self.error = error
            self.errorOffset = errorOffset
        }
    }

    public struct Packets: Codable, Sendable, Hashable {
        /// Records read from the files (after `--filter`).
        public var total: Int
        /// Records that decoded to UDP or TCP.
        public var decoded: Int
        /// Records that did not, by reason (link, IP, fragments, transport), and DNS payloads that did not parse.
        public var undecoded: [String: Int]
        /// DNS messages analysed (UDP datagrams and messages taken out of TCP streams).
        public var dns: Int
        /// UDP/TCP packets on other ports than `dnsPorts`.
        public var notDNS: Int
        /// TCP segments on DNS ports that arrived out of order or after a gap (their stream is dropped).
        public var tcpSegmentsSkipped: Int

        public init(total: Int, decoded: Int, undecoded: [String: Int], dns: Int, notDNS: Int, tcpSegmentsSkipped: Int) {
            self.total = total
            self.decoded = decoded
            self.undecoded = undecoded
            self.dns = dns
            self.notDNS = notDNS
            self.tcpSegmentsSkipped = tcpSegmentsSkipped
        }
    }

    public struct Domain: Codable, Sendable, Hashable {
        public var domain: String
        public var queries: Int
        /// `iodine-like`, `txt-tunnel`, `tunnel` or `plain` (see docs/TRACE.md).
        public var kind: String

        public init(domain: String, queries: Int, kind: String) {
            self.domain = domain
            self.queries = queries
            self.kind = kind
        }
    }
}

/// The transaction metrics of one aggregate: all traffic, a resolver, or a resolver x domain x type group.
public struct TraceStats: Codable, Sendable, Hashable {
    public var resolver: String?
    public var domain: String?
    public var recordType: String?
    /// Distinct query transactions (client, port, resolver, id, question).
    public var queries: Int
    /// Same query sent again while unanswered (joins the first transaction, as tshark does).
    public var retransmissions: Int
    /// Transactions with a response within Tmax.
    public var answered: Int
    /// Transactions without a response within Tmax (RFC 7680), late ones included.
    public var lost: Int
    /// Of the lost: a response came after Tmax.
    public var late: Int
    /// Of the lost: no response at all.
    public var neverAnswered: Int
    /// Further responses to an answered transaction.
    public var duplicates: Int
    /// Responses without a query in the capture.
    public var unmatchedResponses: Int
    /// RFC 4737 reordered responses (relative to their queries' order) and their ratio to responses received.
    public var reordered: Int
    public var reorderedRatio: Double?
    public var lossRatio: Double?
    /// Wilson score 95% interval of the loss ratio.
    public var lossWilson95: [Double]?
    public var rttMs: Percentiles
    /// Responses with the TC bit (RFC 1035 section 4.1.1).
    public var truncated: Int
    public var rcodes: [String: Int]
    public var querySizes: [SizeBucket]
    public var responseSizes: [SizeBucket]
    public var groups: [TraceStats]?

    public init(resolver: String? = nil, domain: String? = nil, recordType: String? = nil, queries: Int, retransmissions: Int,
                answered: Int, lost: Int, late: Int, neverAnswered: Int, duplicates: Int, unmatchedResponses: Int,
                reordered: Int, reorderedRatio: Double?, lossRatio: Double?, lossWilson95: [Double]?, rttMs: Percentiles,
                truncated: Int, rcodes: [String: Int], querySizes: [SizeBucket], responseSizes: [SizeBucket],
                groups: [TraceStats]? = nil) {
        self.resolver = resolver
        self.domain = domain
        self.recordType = recordType
        self.queries = queries
        self.retransmissions = retransmissions
        self.answered = answered
        self.lost = lost
        self.late = late
        self.neverAnswered = neverAnswered
        self.duplicates = duplicates
        self.unmatchedResponses = unmatchedResponses
        self.reordered = reordered
        self.reorderedRatio = reorderedRatio
        self.lossRatio = lossRatio
        self.lossWilson95 = lossWilson95
        self.rttMs = rttMs
        self.truncated = truncated
        self.rcodes = rcodes
        self.querySizes = querySizes
        self.responseSizes = responseSizes
        self.groups = groups
    }

    /// RTT percentiles from an HdrHistogram (three significant digits); all nil with a reason when no
    /// response was timed.
    public struct Percentiles: Codable, Sendable, Hashable {
        public var samples: Int
        public var min: Double?
        public var p50: Double?
        public var p90: Double?
        public var p99: Double?
        public var max: Double?
        public var reason: String?

        public init(samples: Int, min: Double? = nil, p50: Double? = nil, p90: Double? = nil, p99: Double? = nil,
                    max: Double? = nil, reason: String? = nil) {
            self.samples = samples
            self.min = min
            self.p50 = p50
            self.p90 = p90
            self.p99 = p99
            self.max = max
            self.reason = reason
        }
    }

    public struct SizeBucket: Codable, Sendable, Hashable {
        public var fromBytes: Int
        /// Exclusive; nil for the open top bucket.
        public var toBytes: Int?
        public var count: Int

        public init(fromBytes: Int, toBytes: Int?, count: Int) {
            self.fromBytes = fromBytes
            self.toBytes = toBytes
            self.count = count
        }
    }
}
