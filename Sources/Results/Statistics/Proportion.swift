public import Base
/// A measured proportion (a loss ratio, a duplicate ratio) with its sample size and Wilson 95 % interval.
///
/// When there are no samples, `ratio`, `ciLow` and `ciHigh` are nil and `reason` says why: a report
/// never prints a number that nothing measured.
public struct Proportion: Codable, Sendable, Hashable {
    /// The events counted (lost packets, duplicated packets).
    public var count: Int
    /// The trials they were counted among.
    public var samples: Int
    @NullCoded public var ratio: Double?
    @NullCoded public var ciLow: Double?
    @NullCoded public var ciHigh: Double?
    @NullCoded public var reason: String?

    public init(count: Int, samples: Int) {
        self.count = count
        self.samples = samples
        if let interval = WilsonInterval(successes: count, trials: samples) {
            ratio = Double(count) / Double(samples)
            ciLow = interval.low
            ciHigh = interval.high
        } else {
            reason = samples <= 0 ? "no samples" : "count \(count) outside 0...\(samples)"
        }
    }
}

