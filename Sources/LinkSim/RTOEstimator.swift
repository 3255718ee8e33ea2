/// The retransmission timeout of RFC 6298, with Karn's rule and a configurable backoff factor.
///
/// - First sample R (2.2): SRTT = R, RTTVAR = R / 2.
/// - Later samples (2.3): RTTVAR = (1 - beta) RTTVAR + beta |SRTT - R|, then SRTT = (1 - alpha) SRTT + alpha R,
///   alpha = 1/8, beta = 1/4.
/// - RTO = SRTT + max(G, K x RTTVAR), K = 4, clamped to [minimum, maximum] (2.4, 2.5).
/// - Karn's rule (3): the caller never samples a segment that was retransmitted.
/// - Backoff (5.5): on expiry RTO = RTO x factor (2 in the RFC), up to the maximum; a new sample
///   recomputes RTO from SRTT and RTTVAR, which ends the backoff.
public struct RTOEstimator: Sendable, Equatable {
    public let initialMs: Double
    public let minimumMs: Double
    public let maximumMs: Double
    public let backoffFactor: Double
    /// Clock granularity G.
    public let granularityMs: Double

    public private(set) var srttMs: Double?
    public private(set) var rttvarMs = 0.0
    public private(set) var rtoMs: Double
    public private(set) var samples = 0

    public init(initialMs: Double, minimumMs: Double, maximumMs: Double, backoffFactor: Double, granularityMs: Double = 1) {
        self.initialMs = initialMs
        self.minimumMs = minimumMs
        self.maximumMs = maximumMs
        self.backoffFactor = backoffFactor
        self.granularityMs = granularityMs
        rtoMs = min(max(initialMs, minimumMs), maximumMs)
    }

    /// Takes one RTT measurement from a segment sent exactly once (Karn).
    public mutating func sample(_ rttMs: Double) {
        if let srtt = srttMs {
            rttvarMs = 0.75 * rttvarMs + 0.25 * abs(srtt - rttMs)
            srttMs = 0.875 * srtt + 0.125 * rttMs
        } else {
            srttMs = rttMs
            rttvarMs = rttMs / 2
        }
        samples += 1
        rtoMs = min(max(srttMs! + max(granularityMs, 4 * rttvarMs), minimumMs), maximumMs)
    }

    /// The timer expired: back off (RFC 6298 5.5).
    public mutating func backOff() {
        rtoMs = min(rtoMs * backoffFactor, maximumMs)
    }
}
