import Foundation

/// The Clopper-Pearson ("exact") interval for a binomial proportion (Clopper & Pearson 1934, Biometrika
/// 26:404): the bounds are Beta quantiles, lower = B(alpha/2; x, n - x + 1), upper = B(1 - alpha/2;
/// x + 1, n - x). Its coverage is at least the nominal level for every true proportion, which is why
/// the FEC figures use it: a simulated failure rate near 1e-5 is where Wilson's can dip below 95 %.
///
/// x and n may be fractional: Korn & Graubard (1998, Survey Methodology 24:193) use this interval with
/// an effective sample size n / deff for clustered data (`ClusteredProportion`).
public struct ClopperPearsonInterval: Sendable, Hashable {
    public var low: Double
    public var high: Double

    /// Nil when there is nothing to estimate (no trials, or x outside 0...n).
    public init?(successes x: Double, trials n: Double, confidence: Double = 0.95) {
        guard n > 0, x >= 0, x <= n, x.isFinite, n.isFinite else { return nil }
        let alpha = 1 - confidence
        low = x <= 0 ? 0 : Self.betaQuantile(alpha / 2, a: x, b: n - x + 1)
        high = x >= n ? 1 : Self.betaQuantile(1 - alpha / 2, a: x + 1, b: n - x)
    }

    public init?(successes x: Int, trials n: Int, confidence: Double = 0.95) {
        self.init(successes: Double(x), trials: Double(n), confidence: confidence)
    }

    /// The q-quantile of Beta(a, b), by bisection on the regularized incomplete beta (monotone in x).
    static func betaQuantile(_ q: Double, a: Double, b: Double) -> Double {
        var lo = 0.0, hi = 1.0
        for _ in 0..<200 {
            let mid = (lo + hi) / 2
            if regularizedBeta(mid, a: a, b: b) < q { lo = mid } else { hi = mid }
            if hi - lo < 1e-15 * max(mid, 1e-300) { break }
        }
        return (lo + hi) / 2
    }

    /// I_x(a, b) through its continued fraction (Numerical Recipes 3rd ed., section 6.4, with the
    /// modified Lentz method), using the symmetry I_x(a, b) = 1 - I_{1-x}(b, a) where it converges faster.
    static func regularizedBeta(_ x: Double, a: Double, b: Double) -> Double {
        if x <= 0 { return 0 }
        if x >= 1 { return 1 }
        let lnFront = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x)
        if x < (a + 1) / (a + b + 2) {
            return exp(lnFront) * continuedFraction(x, a: a, b: b) / a
        }
        return 1 - exp(lnFront) * continuedFraction(1 - x, a: b, b: a) / b
    }

    private static func continuedFraction(_ x: Double, a: Double, b: Double) -> Double {
        let tiny = 1e-300
        var c = 1.0
        var d = 1 - (a + b) * x / (a + 1)
        if abs(d) < tiny { d = tiny }
        d = 1 / d
        var h = d
        for m in 1...10_000 {
            let mm = Double(m)
            let m2 = 2 * mm
            var aa = mm * (b - mm) * x / ((a + m2 - 1) * (a + m2))
            d = 1 + aa * d; if abs(d) < tiny { d = tiny }
            c = 1 + aa / c; if abs(c) < tiny { c = tiny }
            d = 1 / d
            h *= d * c
            aa = -(a + mm) * (a + b + mm) * x / ((a + m2) * (a + m2 + 1))
            d = 1 + aa * d; if abs(d) < tiny { d = tiny }
            c = 1 + aa / c; if abs(c) < tiny { c = tiny }
            d = 1 / d
            let del = d * c
            h *= del
            if abs(del - 1) < 1e-15 { break }
        }
        return h
    }
}
