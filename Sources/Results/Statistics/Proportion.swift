public import Base
/// A measured proportion (a loss ratio, a duplicate ratio) with its sample size and Wilson 95 % interval.
///
/// When there are no samples, `ratio`, `ciLow` and `ciHigh` are nil and `reason` says why: a report
/// never prints a number that nothing measured. The one proportion type of every report: rank/1 and
/// monitor/2 wrote a rate step's loss as `total`, `low` and `high`, and those documents still read.
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

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let legacy = try decoder.container(keyedBy: LegacyKeys.self)
        count = try c.decode(Int.self, forKey: .count)
        samples = try c.decodeIfPresent(Int.self, forKey: .samples) ?? legacy.decode(Int.self, forKey: .total)
        ratio = try c.decodeIfPresent(Double.self, forKey: .ratio)
        ciLow = try c.decodeIfPresent(Double.self, forKey: .ciLow) ?? legacy.decodeIfPresent(Double.self, forKey: .low)
        ciHigh = try c.decodeIfPresent(Double.self, forKey: .ciHigh) ?? legacy.decodeIfPresent(Double.self, forKey: .high)
        reason = try c.decodeIfPresent(String.self, forKey: .reason)
    }

    /// The keys of a rate step's loss in rank/1 and monitor/2.
    private enum LegacyKeys: String, CodingKey {
        case total, low, high
    }
}
