public import Results
/// What tunnelprobe's probes measured for one resolver-domain pair: the model's only input.
///
/// The sizes are the resolver's, not any engine's: the longest query name that arrived intact and,
/// per record type, the size of the largest whole DNS response message that arrived intact at the
/// client. The models turn them into each engine's own units.
public struct PairMeasurement: Sendable, Hashable {
    /// The resolver as the user wrote it (`1.2.3.4`, `1.2.3.4:5353`, `[2001:db8::1]:53`).
    public var resolver: String
    /// The tunnel domain (text form; a trailing dot is ignored).
    public var domain: String
    /// Text length (with dots, without a trailing dot) of the longest query name that arrived
    /// intact; nil when the upload stage did not measure it. Values above 253 count as 253.
    public var longestName: Int?
    /// Per record type, the largest response that arrived intact.
    public var responses: [RecordType: ResponseMeasurement]
    /// The EDNS UDP size the resolver advertises upstream (0: no OPT record); nil when unknown.
    public var upstreamEDNS: Int?

    public init(resolver: String, domain: String, longestName: Int?, responses: [RecordType: ResponseMeasurement],
                upstreamEDNS: Int? = nil) {
        self.resolver = resolver
        self.domain = domain
        self.longestName = longestName
        self.responses = responses
        self.upstreamEDNS = upstreamEDNS
    }
}

/// The largest DNS response message of one record type that arrived intact.
public struct ResponseMeasurement: Sendable, Hashable, Codable {
    /// Size in bytes of the whole DNS message as the client received it.
    public var bytes: Int
    /// True when the probe's largest size passed: the resolver may carry more than `bytes`.
    public var isLowerBound: Bool

    public init(bytes: Int, isLowerBound: Bool = false) {
        self.bytes = bytes
        self.isLowerBound = isLowerBound
    }
}
