import Histogram
public import Results

extension Percentiles {
    /// Longest delay the histogram tracks: one hour, far past any Tmax.
    static let highestMicros: UInt64 = 3_600_000_000

    /// `nanoseconds` in, milliseconds out, through an HdrHistogram of microseconds (3 significant digits).
    public init(nanoseconds values: [UInt64]) {
        guard !values.isEmpty else {
            self.init(samples: 0, reason: "no delays measured")
            return
        }
        var h = Histogram<UInt64>(lowestDiscernibleValue: 1, highestTrackableValue: Self.highestMicros,
                                  numberOfSignificantValueDigits: .three)
        for v in values { _ = h.record(Swift.min(Swift.max(1, v / 1000), Self.highestMicros)) }
        func ms(_ micros: UInt64) -> Double { Double(micros) / 1000 }
        self.init(samples: values.count, min: ms(h.min), p50: ms(h.valueAtPercentile(50)), p90: ms(h.valueAtPercentile(90)),
                  p99: ms(h.valueAtPercentile(99)), max: ms(h.maxRecorded),
                  cdf: (1...100).map { ms($0 == 100 ? h.maxRecorded : h.valueAtPercentile(Double($0))) })
    }
}
