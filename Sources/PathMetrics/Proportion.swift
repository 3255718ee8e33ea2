/// A measured proportion (a loss ratio, a duplicate ratio) with its sample size and Wilson 95 % interval.
///
/// When there are no samples, `ratio`, `ciLow` and `ciHigh` are nil and `reason` says why: a report
/// never prints a number that nothing measured.
public struct Proportion: Codable, Sendable, Hashable {
    /// The events counted (lost packets, duplicated packets).
    public var count: Int
    /// The trials they were counted among.
    public var samples: Int
    public var ratio: Double?
    public var ciLow: Double?
    public var ciHigh: Double?
    public var reason: String?

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

/// The Wilson score interval for a binomial proportion (Wilson 1927; the measurement sheet asks for it
/// on every rate): unlike the normal approximation it stays inside [0, 1] and is honest for small n and
/// for proportions near 0, which is where loss ratios live.
public struct WilsonInterval: Sendable, Hashable {
    public var low: Double
    public var high: Double

    /// z for a two-sided 95 % interval.
    public static let z95 = 1.959963984540054

    public init?(successes k: Int, trials n: Int, z: Double = WilsonInterval.z95) {
        guard n > 0, k >= 0, k <= n else { return nil }
        let nn = Double(n)
        let p = Double(k) / nn
        let z2 = z * z
        let denominator = 1 + z2 / nn
        let centre = (p + z2 / (2 * nn)) / denominator
        let half = z * (p * (1 - p) / nn + z2 / (4 * nn * nn)).squareRoot() / denominator
        low = k == 0 ? 0 : max(0, centre - half)
        high = k == n ? 1 : min(1, centre + half)
    }
}

extension Proportion {
    /// Every key is written, absent values as null: a reader sees that the metric exists and was not measured.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(count, forKey: .count)
        try c.encode(samples, forKey: .samples)
        try c.encode(ratio, forKey: .ratio)
        try c.encode(ciLow, forKey: .ciLow)
        try c.encode(ciHigh, forKey: .ciHigh)
        try c.encode(reason, forKey: .reason)
    }
}
