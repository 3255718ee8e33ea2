/// What the responder said about one sequence number, merged from every receive history that covered it.
public struct ResponderView: Codable, Sendable, Hashable {
    /// Copies of the query the responder received (0: not seen). More than one: the resolver retried upstream.
    public var copies: Int
    /// Responder clock (microseconds since the Unix epoch) when the first copy arrived; nil when not seen.
    public var receivedMicros: UInt64?
    /// The first copy's rank among the stream's arrivals at the responder (its receive order).
    public var arrivalIndex: UInt64?

    public init(copies: Int, receivedMicros: UInt64? = nil, arrivalIndex: UInt64? = nil) {
        self.copies = copies
        self.receivedMicros = receivedMicros
        self.arrivalIndex = arrivalIndex
    }

    /// Two views of the same seq from different replies: the one that saw more copies is the later one.
    public func merged(with other: ResponderView) -> ResponderView {
        if other.copies > copies { return other }
        return self
    }
}

/// Everything measured about one probe of a stream.
public struct PathRecord: Codable, Sendable, Hashable {
    public var seq: UInt64
    /// Client monotonic clock, nanoseconds since the start of the run.
    public var sentNanos: UInt64
    /// Nil when no receive history covered this seq (its direction of loss is then unknown).
    public var view: ResponderView?
    /// Arrival times (same clock as `sentNanos`) of every authenticated response copy, in arrival order.
    public var arrivals: [UInt64]
    /// Responses for this probe that carried no authenticated reply (SERVFAIL, REFUSED, forged...).
    public var otherResponses: Int

    public init(seq: UInt64, sentNanos: UInt64, view: ResponderView? = nil, arrivals: [UInt64] = [], otherResponses: Int = 0) {
        self.seq = seq
        self.sentNanos = sentNanos
        self.view = view
        self.arrivals = arrivals
        self.otherResponses = otherResponses
    }
}

/// What happened to one probe, as the report counts it.
public enum PathFate: String, Codable, Sendable, CaseIterable {
    /// A response arrived within Tmax.
    case delivered
    /// The responder never saw the query (a history covering the seq says so).
    case lostUp
    /// The responder saw the query but no response arrived within Tmax (some of these are `late`).
    case lostDown
    /// No response and no history covering the seq: lost, direction unknown.
    case lostUnknown
}
