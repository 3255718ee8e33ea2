/// A token bucket per source address, so one source cannot make the responder a flood cannon.
///
/// Not thread-safe: each datagram channel owns one and uses it on its event loop only.
public struct SourceRateLimiter {
    public let ratePerSecond: Double
    public let burst: Double
    private var buckets: [[UInt8]: (tokens: Double, last: UInt64)] = [:]
    private var lastPrune: UInt64 = 0

    /// `ratePerSecond` 0 disables limiting.
    public init(ratePerSecond: Double, burst: Double? = nil) {
        self.ratePerSecond = ratePerSecond
        self.burst = burst ?? max(ratePerSecond, 1)
    }

    /// Takes one token for `source` at `nowNanos`; false when the source is over its rate.
    public mutating func allow(source: [UInt8], nowNanos: UInt64) -> Bool {
        guard ratePerSecond > 0 else { return true }
        if nowNanos &- lastPrune > 10_000_000_000 { prune(nowNanos) }
        var entry = buckets[source] ?? (burst, nowNanos)
        let elapsed = Double(nowNanos &- entry.last) / 1e9
        entry.tokens = min(burst, entry.tokens + elapsed * ratePerSecond)
        entry.last = nowNanos
        let allowed = entry.tokens >= 1
        if allowed { entry.tokens -= 1 }
        buckets[source] = entry
        return allowed
    }

    /// Forgets sources whose bucket has refilled: memory stays bounded by recent sources.
    private mutating func prune(_ now: UInt64) {
        lastPrune = now
        let full = UInt64(burst / ratePerSecond * 1e9)
        buckets = buckets.filter { now &- $0.value.last < full }
    }
}
