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
    /// Responses received (answered or late) that the capture's snap length cut after their question:
    /// matched by the question they kept, so answered rather than lost; their contents were not seen.
    /// Absent (nil) in reports written before it was counted.
    public var snapTruncated: Int?
    public var rcodes: [String: Int]
    public var querySizes: [SizeBucket]
    public var responseSizes: [SizeBucket]
    public var groups: [TraceStats]?

    public init(resolver: String? = nil, domain: String? = nil, recordType: String? = nil, queries: Int, retransmissions: Int,
                answered: Int, lost: Int, late: Int, neverAnswered: Int, duplicates: Int, unmatchedResponses: Int,
                reordered: Int, reorderedRatio: Double?, lossRatio: Double?, lossWilson95: [Double]?, rttMs: Percentiles,
                truncated: Int, snapTruncated: Int? = 0, rcodes: [String: Int], querySizes: [SizeBucket], responseSizes: [SizeBucket],
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
        self.snapTruncated = snapTruncated
        self.rcodes = rcodes
        self.querySizes = querySizes
        self.responseSizes = responseSizes
        self.groups = groups
    }

    /// RTT percentiles (the shared `Percentiles`, Results/Statistics) from an HdrHistogram (three
    /// significant digits); all nil with a reason when no response was timed.
    public typealias Percentiles = Results.Percentiles

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
