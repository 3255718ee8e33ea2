public import Base

/// Percentiles of measured values, in milliseconds: the one type every report uses for them. trace's
/// RTTs (`TraceStats.rttMs`, from an HdrHistogram with three significant digits), simulate's delays
/// (`SimulateReport.Level.delayMs` and the others, p99 only from 100 samples and p99.9 only from
/// 1,000), path's RTT and one-way delays (from an HdrHistogram of microseconds, with the CDF a chart
/// draws), and the RTTs of a rank, monitor or stream-path rate step (nearest-rank, `nearestRank`).
///
/// A figure nobody measured is written as null (the key is there, `NullCoded`), and `reason` says why
/// when all are; the CDF is left out when there is none. Older documents still read: a missing key
/// is nil, and the rate steps' figures of rank/1 and monitor/2, which had no `samples`, read as 0.
public struct Percentiles: Codable, Sendable, Hashable {
    public var samples: Int
    @NullCoded public var min: Double?
    @NullCoded public var p50: Double?
    @NullCoded public var p90: Double?
    @NullCoded public var p99: Double?
    @NullCoded public var p999: Double?
    @NullCoded public var max: Double?
    /// The value at each percentile 1...100 (100 values): the distribution a CDF chart draws.
    public var cdf: [Double]?
    @NullCoded public var reason: String?

    public init(samples: Int, min: Double? = nil, p50: Double? = nil, p90: Double? = nil, p99: Double? = nil,
                p999: Double? = nil, max: Double? = nil, cdf: [Double]? = nil, reason: String? = nil) {
        self.samples = samples
        self.min = min
        self.p50 = p50
        self.p90 = p90
        self.p99 = p99
        self.p999 = p999
        self.max = max
        self.cdf = cdf
        self.reason = reason
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        samples = try c.decodeIfPresent(Int.self, forKey: .samples) ?? 0
        min = try c.decodeIfPresent(Double.self, forKey: .min)
        p50 = try c.decodeIfPresent(Double.self, forKey: .p50)
        p90 = try c.decodeIfPresent(Double.self, forKey: .p90)
        p99 = try c.decodeIfPresent(Double.self, forKey: .p99)
        p999 = try c.decodeIfPresent(Double.self, forKey: .p999)
        max = try c.decodeIfPresent(Double.self, forKey: .max)
        cdf = try c.decodeIfPresent([Double].self, forKey: .cdf)
        reason = try c.decodeIfPresent(String.self, forKey: .reason)
    }

    /// Nearest-rank percentiles of `values` (RFC 2681 leaves the statistic to the user; the
    /// nearest-rank method of RFC 2330 6.6.1 keeps every reported value a measured one); nil for none.
    public static func nearestRank(_ values: [Double]) -> Percentiles? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        func rank(_ p: Double) -> Double { sorted[Swift.min(sorted.count - 1, Swift.max(0, Int((p * Double(sorted.count)).rounded(.up)) - 1))] }
        return Percentiles(samples: sorted.count, min: sorted[0], p50: rank(0.5), p90: rank(0.9), p99: rank(0.99),
                           max: sorted[sorted.count - 1])
    }
}
