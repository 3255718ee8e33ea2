/// The statistics of one stream (one resolver), from its per-probe records (computed by
/// `PathAnalysis(records:tmaxNanos:clockOriginMicros:)` in PathMetrics). Pure: no clock, no I/O.
///
/// Loss follows RFC 7680 section 2.4: a probe whose response has not arrived within Tmax is lost, also
/// when it arrives later (then it is also counted as `late`). The responder's receive history splits
/// each loss into upstream (query lost) and downstream (response lost).
public struct PathAnalysis: Codable, Sendable, Hashable {
    public struct Counts: Codable, Sendable, Hashable {
        public var sent = 0
        public var answered = 0
        public var lostUp = 0
        public var lostDown = 0
        public var lostUnknown = 0
        /// Responses that arrived after Tmax (included in `lostDown`, RFC 7680).
        public var late = 0
        /// Extra query copies the responder received (resolver retries upstream).
        public var duplicatesUp = 0
        /// Extra response copies the client received.
        public var duplicatesDown = 0
        /// Round-trip reordered responses (RFC 4737).
        public var reordered = 0
        /// Responses without an authenticated path reply (SERVFAIL, REFUSED, forged).
        public var otherResponses = 0
        public init() {}
    }

    public struct PerDirection<T: Codable & Sendable & Hashable>: Codable, Sendable, Hashable {
        public var up: T
        public var down: T
        public var roundTrip: T
        public init(up: T, down: T, roundTrip: T) {
            self.up = up
            self.down = down
            self.roundTrip = roundTrip
        }
    }

    public struct Duplicates: Codable, Sendable, Hashable {
        /// Extra query copies seen by the responder.
        public var up: Int
        /// Extra response copies seen by the client.
        public var down: Int
        /// Probes whose query arrived more than once, among those that arrived.
        public var upRatio: Proportion
        /// Probes whose response arrived more than once, among those answered.
        public var downRatio: Proportion
        public init(up: Int, down: Int, upRatio: Proportion, downRatio: Proportion) {
            self.up = up
            self.down = down
            self.upRatio = upRatio
            self.downRatio = downRatio
        }
    }

    public struct Jitter: Codable, Sendable, Hashable {
        public var milliseconds: Double?
        public var reason: String?
        public init(milliseconds: Double?, reason: String?) {
            self.milliseconds = milliseconds
            self.reason = reason
        }
    }

    public struct OneWay: Codable, Sendable, Hashable {
        public var up: Percentiles
        public var down: Percentiles
        public init(up: Percentiles, down: Percentiles) {
            self.up = up
            self.down = down
        }
    }

    public var counts: Counts
    public var loss: PerDirection<Proportion>
    public var lossPatterns: PerDirection<LossPattern>
    public var gilbert: PerDirection<GilbertFit>
    /// RFC 4737 on three orders: up (send order vs responder receive order), down (responder receive order
    /// vs client arrival order) and round trip (send order vs client arrival order).
    public var reordering: PerDirection<Reordering>
    public var duplicates: Duplicates
    public var rtt: Percentiles
    public var jitter: Jitter
    public var ipdv: DelayVariation
    /// One-way delays, only when the caller vouches that both clocks agree; nil otherwise.
    public var oneWay: OneWay?
    public var fates: [PathFate]
    public var timeline: LossTimeline

    public init(counts: Counts, loss: PerDirection<Proportion>, lossPatterns: PerDirection<LossPattern>,
                gilbert: PerDirection<GilbertFit>, reordering: PerDirection<Reordering>, duplicates: Duplicates,
                rtt: Percentiles, jitter: Jitter, ipdv: DelayVariation, oneWay: OneWay?, fates: [PathFate],
                timeline: LossTimeline) {
        self.counts = counts
        self.loss = loss
        self.lossPatterns = lossPatterns
        self.gilbert = gilbert
        self.reordering = reordering
        self.duplicates = duplicates
        self.rtt = rtt
        self.jitter = jitter
        self.ipdv = ipdv
        self.oneWay = oneWay
        self.fates = fates
        self.timeline = timeline
    }
}
