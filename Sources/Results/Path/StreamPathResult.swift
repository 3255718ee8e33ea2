public import Base

/// One resolver's `path` over TCP, TLS or HTTPS (`StreamPath`): counts, rates and RTTs; no
/// per-direction loss (not observable over a stream).
public struct StreamPathResult: Sendable, Codable, Hashable {
    /// What `path` can and cannot say over a stream transport, for the report.
    public static let note = "Over TCP, TLS and HTTPS the kernel retransmits lost segments and delivers in order: loss per direction, reordering and duplicates of the path are not observable, and not reported. RTT (RFC 2681) is measured on open, pipelined connections; the first query's RTT includes the connection set-up. A timeout is a query not answered within Tmax."
    public var resolver: String
    public var transport: DNSTransport
    /// Probes sent in the paced stream (the first, connection-opening query not included).
    public var sent: Int
    /// Answered with the responder's authenticated payload, whole.
    public var answered: Int
    /// Not answered within Tmax, or not sent because its connection could not be set up
    /// (`connections.failed` and `lastConnectionFailure` tell which).
    public var timedOut: Int
    public var refused: Int
    public var servfail: Int
    /// Any other failure: a wrong or cut answer, or a query that could not leave (connection failed).
    public var otherFailures: Int
    /// Queries per second as sent, and answers per second over the send span (plus one interval).
    public var offeredRate: Double
    public var answeredRate: Double
    /// RTT percentiles of the answered probes, milliseconds (RFC 2681, nearest rank).
    public var rttMs: Percentiles?
    /// The query sent before the stream on connections not yet open: its RTT includes the set-up.
    public var firstQueryMs: Double?
    public var firstQueryFailure: String?
    public var connections: ConnectionCounts
    /// The named reason of the resolver's last failed connection (`TransportFailure.name`), if any.
    public var lastConnectionFailure: String?

    public init(resolver: String, transport: DNSTransport, sent: Int, answered: Int, timedOut: Int, refused: Int, servfail: Int,
                otherFailures: Int, offeredRate: Double, answeredRate: Double, rttMs: Percentiles?,
                firstQueryMs: Double?, firstQueryFailure: String?, connections: ConnectionCounts, lastConnectionFailure: String?) {
        self.resolver = resolver
        self.transport = transport
        self.sent = sent
        self.answered = answered
        self.timedOut = timedOut
        self.refused = refused
        self.servfail = servfail
        self.otherFailures = otherFailures
        self.offeredRate = offeredRate
        self.answeredRate = answeredRate
        self.rttMs = rttMs
        self.firstQueryMs = firstQueryMs
        self.firstQueryFailure = firstQueryFailure
        self.connections = connections
        self.lastConnectionFailure = lastConnectionFailure
    }

    /// Timeouts over sent (RFC 7680's loss ratio applied to the query's round trip, Tmax = --tmax),
    /// with its Wilson 95 % interval.
    public var timeouts: Proportion { Proportion(count: timedOut, samples: sent) }
}
