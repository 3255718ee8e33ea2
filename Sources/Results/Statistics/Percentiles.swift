/// Percentiles of measured values, in milliseconds: trace's RTTs (`TraceStats.rttMs`, from an
/// HdrHistogram with three significant digits) and simulate's delays (`SimulateReport.Level.delayMs`
/// and the others, p99 only from 100 samples and p99.9 only from 1,000). A figure nobody measured is
/// nil and absent from the JSON; `reason` says why when all are.
public struct Percentiles: Codable, Sendable, Hashable {
    public var samples: Int
    public var min: Double?
    public var p50: Double?
    public var p90: Double?
    public var p99: Double?
    public var p999: Double?
    public var max: Double?
    public var reason: String?

    public init(samples: Int, min: Double? = nil, p50: Double? = nil, p90: Double? = nil, p99: Double? = nil,
                p999: Double? = nil, max: Double? = nil, reason: String? = nil) {
        self.samples = samples
        self.min = min
        self.p50 = p50
        self.p90 = p90
        self.p99 = p99
        self.p999 = p999
        self.max = max
        self.reason = reason
    }
}
