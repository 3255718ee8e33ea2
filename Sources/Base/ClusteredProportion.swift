/// A proportion whose events come in clusters (lost packets come one FEC group at a time), with an
/// interval that accounts for it.
///
/// The ratio estimator p = sum(y) / sum(n) over clusters g (y_g events among n_g trials) has the
/// cluster-robust (linearization) variance  v = G / (G - 1) x sum((y_g - p n_g)^2) / (sum n)^2
/// (Cochran, Sampling Techniques, 3rd ed., section 6.11). Its design effect deff = v / (p (1 - p) / n)
/// (Kish 1965) shrinks the sample to n / deff; the interval is Clopper-Pearson on that effective
/// sample (Korn & Graubard 1998), with deff never below 1 so the interval is never narrower than the
/// packets-independent one. With no event the design effect cannot be estimated: the interval takes
/// the worst case, one trial per cluster.
public struct ClusteredProportion: Sendable, Hashable {
    public var clusters = 0
    public var sumN = 0.0, sumN2 = 0.0
    public var sumY = 0.0, sumY2 = 0.0, sumYN = 0.0

    public init() {}

    @inline(__always)
    public mutating func record(events y: Int, of n: Int) {
        guard n > 0 else { return }
        let (yy, nn) = (Double(y), Double(n))
        clusters += 1
        sumN += nn; sumN2 += nn * nn
        sumY += yy; sumY2 += yy * yy; sumYN += yy * nn
    }

    /// A cluster of n trials whose events come later (`addEvents`), or never.
    @inline(__always)
    public mutating func addCluster(trials n: Int) {
        guard n > 0 else { return }
        clusters += 1
        sumN += Double(n); sumN2 += Double(n) * Double(n)
    }

    /// y events in a cluster of n trials already counted by `addCluster`.
    public mutating func addEvents(_ y: Int, clusterOf n: Int) {
        let (yy, nn) = (Double(y), Double(n))
        sumY += yy; sumY2 += yy * yy; sumYN += yy * nn
    }

    public mutating func add(_ o: ClusteredProportion) {
        clusters += o.clusters
        sumN += o.sumN; sumN2 += o.sumN2
        sumY += o.sumY; sumY2 += o.sumY2; sumYN += o.sumYN
    }

    public var proportion: Double? { sumN > 0 ? sumY / sumN : nil }

    /// Cluster-robust variance of the proportion; nil with fewer than two clusters.
    public var variance: Double? {
        guard clusters >= 2, let p = proportion else { return nil }
        let g = Double(clusters)
        let ss = max(0, sumY2 - 2 * p * sumYN + p * p * sumN2)
        return g / (g - 1) * ss / (sumN * sumN)
    }

    /// Kish's design effect, at least 1; nil when it cannot be estimated (no event, or one cluster).
    public var designEffect: Double? {
        guard let p = proportion, p > 0, p < 1, let v = variance else { return nil }
        return max(1, v / (p * (1 - p) / sumN))
    }

    /// Trials worth of independent information.
    public var effectiveTrials: Double? {
        guard sumN > 0 else { return nil }
        if let d = designEffect { return sumN / d }
        return Double(max(clusters, 1))
    }

    /// The 95 % Korn-Graubard interval (Clopper-Pearson on the effective sample).
    public func interval(confidence: Double = 0.95) -> ClopperPearsonInterval? {
        guard let p = proportion, let n = effectiveTrials else { return nil }
        return ClopperPearsonInterval(successes: p * n, trials: n, confidence: confidence)
    }
}

/// A mean over independent replications (runs with different seeds) and its Student-t interval: the
/// spread a reader would see running the simulation again, whatever the channel's own correlation.
public struct ReplicationMean: Sendable, Hashable {
    public var values: [Double]

    public init(_ values: [Double]) { self.values = values }

    public var mean: Double? { values.isEmpty ? nil : values.reduce(0, +) / Double(values.count) }

    /// Standard error of the mean; nil with fewer than two replications.
    public var standardError: Double? {
        guard values.count >= 2, let m = mean else { return nil }
        let ss = values.reduce(0) { $0 + ($1 - m) * ($1 - m) }
        return (ss / Double(values.count - 1) / Double(values.count)).squareRoot()
    }

    /// mean +- t(0.975, R - 1) x SE.
    public var interval95: (low: Double, high: Double)? {
        guard let m = mean, let se = standardError else { return nil }
        let t = Self.t975(degreesOfFreedom: values.count - 1)
        return (m - t * se, m + t * se)
    }

    /// Two-sided 95 % Student-t quantiles (any statistics table, e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2).
    public static func t975(degreesOfFreedom df: Int) -> Double {
        let table: [Double] = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                               2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                               2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]
        guard df >= 1 else { return .infinity }
        if df <= table.count { return table[df - 1] }
        return df <= 60 ? 2.000 : (df <= 120 ? 1.980 : 1.960)
    }
}
