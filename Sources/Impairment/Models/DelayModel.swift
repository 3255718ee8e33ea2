public import Base

/// Fixed delay plus uniform jitter, on a first-in first-out link.
///
/// netem draws each packet's delay independently, so with jitter larger than the gap between
/// packets it reorders them as a side effect. Here jitter never reorders: a datagram leaves no
/// earlier than the one before it in the same direction (like netem with `rate` set, or a real
/// serial link). Reordering comes only from the explicit `Reordering` model, so the log's
/// `reordered` mark is the whole truth about reordering.
public struct DelayModel: Sendable, Hashable {
    public let delayNs: UInt64
    public let jitterNs: UInt64
    /// When the previous datagram of this direction leaves (FIFO clamp).
    private var lastDepartureNs: UInt64 = 0

    public init(delayMs: Double, jitterMs: Double) {
        delayNs = UInt64((delayMs * 1e6).rounded())
        jitterNs = UInt64((jitterMs * 1e6).rounded())
    }

    public var isActive: Bool { delayNs > 0 || jitterNs > 0 }

    /// The departure time of a datagram ready at `readyNs`: ready + delay + U(-jitter, +jitter),
    /// never before `readyNs` and never before the previous departure. One draw when jitter is on.
    public mutating func departure(readyNs: UInt64, using rng: inout SplitMix64) -> UInt64 {
        var delay = Double(delayNs)
        if jitterNs > 0 { delay += (rng.unitInterval() * 2 - 1) * Double(jitterNs) }
        let proposed = readyNs + UInt64(max(0, delay).rounded())
        let departure = max(proposed, lastDepartureNs)
        lastDepartureNs = departure
        return departure
    }
}

/// Explicit reordering: with probability `probability` a datagram is held back until `gap` later
/// datagrams of its direction have left the relay (or `maxHoldNs` has passed), so it arrives
/// behind them. A held datagram is reordered in RFC 4737's sense whenever at least one later
/// datagram overtakes it, which is the case unless the traffic stops for `maxHoldNs`.
public struct Reordering: Sendable, Hashable {
    /// The longest a datagram is held when no later traffic comes.
    public static let maxHoldNs: UInt64 = 1_000_000_000

    public let probability: Double
    public let gap: Int

    public init(probability: Double, gap: Int) {
        self.probability = probability
        self.gap = gap
    }

    /// One draw: the gap to hold this datagram behind, or nil to send it in order.
    public func hold(using rng: inout SplitMix64) -> Int? {
        guard probability > 0 else { return nil }
        return rng.unitInterval() < probability ? gap : nil
    }
}

/// Duplication: with probability `probability` a datagram leaves twice, the copy right after the
/// original (netem's `duplicate`).
public struct Duplication: Sendable, Hashable {
    public let probability: Double

    public init(probability: Double) { self.probability = probability }

    /// One draw: how many copies leave (1 or 2).
    public func copies(using rng: inout SplitMix64) -> Int {
        guard probability > 0 else { return 1 }
        return rng.unitInterval() < probability ? 2 : 1
    }
}
