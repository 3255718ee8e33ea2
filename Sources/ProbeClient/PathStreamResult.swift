public import Base
public import Results

/// Everything one stream (one resolver) measured: the per-probe records and what identifies each probe
/// on the wire, so a capture or a relay log can be compared with it packet by packet.
public struct PathStreamResult: Sendable {
    public struct Wire: Sendable, Hashable {
        public var nonce: [UInt8]
        public var dnsID: UInt16
        /// Size of the query datagram (the DNS message) in bytes.
        public var querySize: Int
        /// Size of the first authenticated response datagram, when one arrived.
        public var responseSize: Int?
    }

    public var resolver: Endpoint
    public var stream: UInt32
    /// In sequence order; records[i].seq == i.
    public var records: [PathRecord]
    public var wire: [Wire]
    public var drainsSent: Int
    public var drainsAnswered: Int
    /// Datagrams that matched no probe of this stream (stray, forged, or of another stream).
    public var unmatched: Int
    /// Query datagrams written (probes and drains) and datagrams read from the socket (every response
    /// copy, drain answers, strays): what a capture of the stream counts.
    public var datagramsSent: Int
    public var datagramsReceived: Int
    /// True when no authenticated reply arrived within `absentAfter`, or in the whole run when it was shorter.
    public var responderAbsent: Bool
    /// Probes sent but left out of `records` because the run was interrupted before their Tmax ran out.
    public var inFlightExcluded: Int
    /// The first error the socket gave when sending (e.g. "network unreachable" for an IPv6
    /// resolver from a host without IPv6), nil when every send went out.
    public var sendError: String?
    /// Datagrams the kernel dropped at this stream's own socket (receive buffer full): responses that
    /// arrived but that the client failed to read, which would otherwise pass for downstream loss.
    public var clientSocketDrops: Int?
    /// Wall clock at the records' time origin, microseconds since the Unix epoch.
    public var clockOriginMicros: UInt64
    public var elapsedSeconds: Double
}
