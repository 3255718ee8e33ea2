/// The sender's FEC grouping, as the client describes it: originals go out at once, and a group's
/// repair symbols follow when the group has k originals or when the flush timeout since its first
/// original fires, whichever comes first (a partial group gets its repair too).
///
/// A value type with no allocation, so the simulator can frame millions of packets.
public struct FECFramer: Sendable {
    /// A group that has just closed: its repair symbols are due now.
    public struct Closed: Sendable, Equatable {
        public var group: Int
        public var originals: Int
        public var repairs: Int
        /// True when the flush timeout closed it before it filled.
        public var byTimeout: Bool

        public init(group: Int, originals: Int, repairs: Int, byTimeout: Bool) {
            self.group = group
            self.originals = originals
            self.repairs = repairs
            self.byTimeout = byTimeout
        }
    }

    public let level: FECLevel
    /// The id of the group the next original joins.
    public private(set) var currentGroup = 0
    /// Originals already in the current group.
    public private(set) var filled = 0
    /// When the current group's first original was sent (ms), meaningful while `filled > 0`.
    public private(set) var openedAtMs = 0.0

    public init(level: FECLevel) {
        self.level = level
    }

    /// When the open group must be flushed, or nil when no group is open (or FEC is off).
    public var flushDeadlineMs: Double? {
        level.isEnabled && filled > 0 ? openedAtMs + level.flushTimeoutMs : nil
    }

    /// Places one original sent at `nowMs` into the open group; returns its group and index in the group,
    /// and the group when this original filled it.
    public mutating func add(atMs nowMs: Double) -> (group: Int, index: Int, closed: Closed?) {
        guard level.isEnabled else { return (-1, 0, nil) }
        if filled == 0 { openedAtMs = nowMs }
        let placed = (currentGroup, filled)
        filled += 1
        if filled == level.k {
            return (placed.0, placed.1, close(byTimeout: false))
        }
        return (placed.0, placed.1, nil)
    }

    /// Closes the open group if its flush deadline is at or before `nowMs`.
    public mutating func flushIfDue(atMs nowMs: Double) -> Closed? {
        guard let deadline = flushDeadlineMs, deadline <= nowMs else { return nil }
        return close(byTimeout: true)
    }

    private mutating func close(byTimeout: Bool) -> Closed {
        let closed = Closed(group: currentGroup, originals: filled, repairs: level.repairCount(originals: filled),
                            byTimeout: byTimeout)
        currentGroup += 1
        filled = 0
        return closed
    }
}
