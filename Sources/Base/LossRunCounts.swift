/// Counts of a binary loss sequence (true = lost) kept on the fly, enough for RFC 3357 loss periods and
/// for the Gilbert fit (docs/MEASUREMENT.md), so a replay of millions of packets needs no array of flags.
///
/// Counts of separate sequences add up (`add`): transitions are never counted across the seam.
public struct LossRunCounts: Sendable, Hashable {
    public var samples = 0
    public var lost = 0
    /// Pairs (previous, current): previous received / previous lost, and the transitions out of each.
    public var n0 = 0, n1 = 0, n01 = 0, n10 = 0, n11 = 0
    /// Triples lost-?-lost: lost-received-lost and lost-lost-lost (Gilbert's c).
    public var n101 = 0, n111 = 0
    /// RFC 3357 loss periods: `periods[L - 1]` = runs of exactly L consecutive losses.
    public var periods: [Int] = []

    private var previous: Bool?
    private var beforePrevious: Bool?
    private var run = 0

    public init() {}

    public init(_ flags: some Sequence<Bool>) {
        for f in flags { record(lost: f) }
        finish()
    }

    @inline(__always)
    public mutating func record(lost x: Bool) {
        samples += 1
        if x { lost += 1; run += 1 } else if run > 0 { closeRun() }
        if let p = previous {
            if p { n1 += 1; if x { n11 += 1 } else { n10 += 1 } } else { n0 += 1; if x { n01 += 1 } }
            if let q = beforePrevious, q, x { if p { n111 += 1 } else { n101 += 1 } }
        }
        beforePrevious = previous
        previous = x
    }

    /// Closes a loss period still open at the end of the sequence.
    public mutating func finish() {
        if run > 0 { closeRun() }
        previous = nil
        beforePrevious = nil
    }

    private mutating func closeRun() {
        if periods.count < run { periods += Array(repeating: 0, count: run - periods.count) }
        periods[run - 1] += 1
        run = 0
    }

    public mutating func add(_ o: LossRunCounts) {
        samples += o.samples
        lost += o.lost
        n0 += o.n0; n1 += o.n1; n01 += o.n01; n10 += o.n10; n11 += o.n11
        n101 += o.n101; n111 += o.n111
        if periods.count < o.periods.count { periods += Array(repeating: 0, count: o.periods.count - periods.count) }
        for (i, c) in o.periods.enumerated() { periods[i] += c }
    }

    public var lossRate: Double? { samples > 0 ? Double(lost) / Double(samples) : nil }
    /// Number of RFC 3357 loss periods.
    public var periodCount: Int { periods.reduce(0, +) }
    /// Mean loss-period length in packets (RFC 3357); nil without losses.
    public var meanPeriod: Double? { periodCount > 0 ? Double(lost - (run)) / Double(periodCount) : nil }

    public static func == (a: LossRunCounts, b: LossRunCounts) -> Bool {
        a.samples == b.samples && a.lost == b.lost && a.n0 == b.n0 && a.n1 == b.n1 && a.n01 == b.n01 && a.n10 == b.n10
            && a.n11 == b.n11 && a.n101 == b.n101 && a.n111 == b.n111 && a.periods == b.periods
    }

    public func hash(into h: inout Hasher) {
        h.combine(samples)
        h.combine(lost)
        h.combine(periods)
    }
}
