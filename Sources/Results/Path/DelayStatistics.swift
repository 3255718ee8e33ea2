public import Base

/// RFC 3550 section 6.4.1 interarrival jitter (algorithm in appendix A.8), in milliseconds.
///
/// For consecutive packets i, j in arrival order: D(i, j) = (Rj - Ri) - (Sj - Si); J += (|D| - J) / 16.
/// The clock offset between sender and receiver cancels, so it needs no synchronised clocks.
public enum InterarrivalJitter {
    /// `packets`: (send time, receive time) in nanoseconds, in arrival order. Nil with fewer than 2.
    public static func milliseconds(_ packets: [(sent: UInt64, received: UInt64)]) -> Double? {
        guard packets.count >= 2 else { return nil }
        var jitter = 0.0
        for k in 1..<packets.count {
            let d = (Double(packets[k].received) - Double(packets[k - 1].received))
                - (Double(packets[k].sent) - Double(packets[k - 1].sent))
            jitter += (abs(d) - jitter) / 16
        }
        return jitter / 1_000_000
    }
}

/// RFC 3393 IP packet delay variation between consecutive packets (selection function: packets i and
/// i + 1 of the stream, both received): ipdv = D(i+1) - D(i). Reported as percentiles of |ipdv| plus the
/// signed extremes, never as a mean (RFC 3393 section 4.5 warns that the mean hides the distribution).
public struct DelayVariation: Codable, Sendable, Hashable {
    public var samples: Int
    @NullCoded public var p50: Double?
    @NullCoded public var p90: Double?
    @NullCoded public var p99: Double?
    /// Signed extremes in milliseconds.
    @NullCoded public var min: Double?
    @NullCoded public var max: Double?
    @NullCoded public var reason: String?

    /// `delays`: per sequence number in order, the delay in nanoseconds or nil when lost.
    public init(delaysInSequence delays: [UInt64?]) {
        var values: [Double] = []
        for k in delays.indices.dropFirst() {
            if let a = delays[k - 1], let b = delays[k] { values.append((Double(b) - Double(a)) / 1_000_000) }
        }
        samples = values.count
        guard !values.isEmpty else {
            reason = "no two consecutive packets received"
            return
        }
        let magnitudes = values.map(abs).sorted()
        func percentile(_ q: Double) -> Double {
            // Nearest rank (the smallest value with at least q of the samples at or below it).
            let rank = Swift.max(1, Int((q / 100 * Double(magnitudes.count)).rounded(.up)))
            return magnitudes[rank - 1]
        }
        p50 = percentile(50)
        p90 = percentile(90)
        p99 = percentile(99)
        min = values.min()
        max = values.max()
    }
}


