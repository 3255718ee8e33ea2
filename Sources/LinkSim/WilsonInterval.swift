/// The Wilson score interval for a binomial proportion (Wilson 1927), at 95 % (z = 1.96) by default.
/// Unlike the normal approximation it stays inside [0, 1] and is honest at 0 successes.
public enum WilsonInterval {
    public static func bounds(successes: Int, trials: Int, z: Double = 1.959964) -> (low: Double, high: Double)? {
        guard trials > 0, successes >= 0, successes <= trials else { return nil }
        let n = Double(trials)
        let p = Double(successes) / n
        let z2 = z * z
        let centre = (p + z2 / (2 * n)) / (1 + z2 / n)
        let half = z / (1 + z2 / n) * (p * (1 - p) / n + z2 / (4 * n * n)).squareRoot()
        // At 0 (or all) successes the bound is exactly 0 (or 1); rounding would leave a few ulps.
        return (successes == 0 ? 0 : max(0, centre - half), successes == trials ? 1 : min(1, centre + half))
    }
}
