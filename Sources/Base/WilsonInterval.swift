/// The Wilson score interval for a binomial proportion (Wilson 1927), the interval every rate in a
/// report carries (docs/MEASUREMENT.md): unlike the normal approximation it stays inside [0, 1] and is
/// honest for small samples and for proportions near 0, which is where loss ratios live.
public struct WilsonInterval: Sendable, Hashable {
    public var low: Double
    public var high: Double

    /// z for a two-sided 95 % interval.
    public static let z95 = 1.959963984540054

    /// Nil when there is nothing to estimate: no trials, or a count outside 0...trials.
    public init?(successes k: Int, trials n: Int, z: Double = WilsonInterval.z95) {
        guard n > 0, k >= 0, k <= n else { return nil }
        let nn = Double(n)
        let p = Double(k) / nn
        let z2 = z * z
        let denominator = 1 + z2 / nn
        let centre = (p + z2 / (2 * nn)) / denominator
        let half = z * (p * (1 - p) / nn + z2 / (4 * nn * nn)).squareRoot() / denominator
        // At 0 (or all) successes the bound is exactly 0 (or 1); rounding would leave a few ulps.
        low = k == 0 ? 0 : max(0, centre - half)
        high = k == n ? 1 : min(1, centre + half)
    }
}
