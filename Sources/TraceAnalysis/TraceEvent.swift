/// One DNS message reduced to what transaction matching needs, or a bare clock tick: what
/// `TraceFrontEnd` hands to `TransactionMatcher`. Plain values, no payload: the reading thread fills
/// batches of them and the matching thread never touches packet bytes.
struct TraceEvent {
    enum Kind: UInt8 {
        /// A packet on a DNS port that carried no DNS message the matcher needs (a question that did
        /// not scan, a TCP segment that completed no message) but whose time advances the clock.
        case tick
        case query
        case response
    }

    // In this order the event is 64 bytes, one cache line.
    var key: TransactionKey
    /// The query's tunnel domain (queries only).
    var domain: Int32
    /// The DNS message's size in bytes.
    var size: Int32
    var time: Int64
    /// `key.hash`, computed on the reading thread.
    var hash: UInt64
    /// DNS header flags (RFC 1035 section 4.1.1): QR, TC, RCODE.
    var flags: UInt16
    var kind: Kind
    /// The snap length cut the message after its question (`size` is its size on the wire).
    var snapCut = false
    /// Reading order, for TimeOrderWindow's ties (in the padding: the event stays 64 bytes).
    var serial: UInt32 = 0

    static func tick(_ time: Int64) -> TraceEvent {
        TraceEvent(key: TransactionKey(), domain: 0, size: 0, time: time, hash: 0, flags: 0, kind: .tick)
    }

    var truncated: Bool { flags & 0x0200 != 0 }
    var rcode: UInt16 { flags & 0x000f }
}
