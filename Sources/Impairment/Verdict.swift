/// What the relay decided for one datagram, at the moment it arrived. The log line of the
/// datagram is this verdict (`docs/IMPAIR.md`).
public struct Verdict: Sendable, Hashable {
    public enum Action: String, Sendable, Hashable {
        /// Sent on (possibly truncated, delayed, duplicated or held for reordering).
        case forward
        /// Not sent; `droppedBy` says which model.
        case drop
        /// A query answered SERVFAIL by the relay and not forwarded.
        case servfail
        /// A query over the rate limit answered REFUSED by the relay and not forwarded
        /// (`--up-rate-excess refuse`, as a public resolver's per-client limit does).
        case refused
    }

    /// The model that dropped a datagram.
    public enum Model: String, Sendable, Hashable, CaseIterable {
        case qname, size, loss, ge, rate, replay
    }

    public var action: Action
    public var droppedBy: Model?
    /// Copies that leave (2 when duplicated, or the replayed `copies`); 0 when dropped.
    public var copies: Int = 1
    /// Relay clock (ns) when the copies leave; equal to the arrival time when nothing delays it.
    public var departureNs: UInt64
    /// Of the delay, the time spent waiting in the rate shaper's queue.
    public var queueNs: UInt64 = 0
    /// Held until this many later datagrams of the direction have left.
    public var reorderGap: Int?
    /// Replaced by header + question with TC set.
    public var truncated = false
    /// The Gilbert-Elliott state the datagram was judged in, when that model runs.
    public var geState: GilbertElliott.State?
    /// The replayed fate's index in its stream, and whether the stream just started over.
    public var replayIndex: Int?
    public var replayWrapped = false

    public init(action: Action, departureNs: UInt64) {
        self.action = action
        self.departureNs = departureNs
    }
}
