/// A token-bucket shaper with a bounded queue: `ratePerSecond` datagrams per second, bursts of up
/// to `burst` datagrams pass at once, and at most `queueLimit` datagrams wait; one more is dropped.
///
/// Implemented as the virtual-scheduling form of the generic cell rate algorithm (ITU-T I.371,
/// also RFC 2698's token bucket in time units): `tat` is the theoretical departure time of the
/// next datagram; a datagram leaves at max(now, tat - burst tolerance). The backlog is how far that
/// departure lies in the future, in emission intervals. Deterministic: no random draws.
public struct RateLimiter: Sendable, Hashable {
    public let ratePerSecond: Double
    public let burst: Int
    public let queueLimit: Int
    private let intervalNs: Double
    private var tatNs: Double = 0

    public init(ratePerSecond: Double, burst: Int = 1, queueLimit: Int = 100) {
        self.ratePerSecond = ratePerSecond
        self.burst = max(1, burst)
        self.queueLimit = max(0, queueLimit)
        self.intervalNs = 1e9 / ratePerSecond
    }

    /// The departure time for a datagram arriving at `nowNs`, or nil when the queue is full
    /// (the datagram is dropped and uses no capacity).
    public mutating func admit(nowNs: UInt64) -> UInt64? {
        let now = Double(nowNs)
        let tolerance = Double(burst - 1) * intervalNs
        let departure = max(now, tatNs - tolerance)
        // Datagrams already waiting ahead of this one.
        let waiting = ((departure - now) / intervalNs).rounded(.up)
        guard waiting <= Double(queueLimit) else { return nil }
        tatNs = max(tatNs, now) + intervalNs
        return UInt64(departure)
    }
}
