public import FEC
public import Fates
import Histogram

/// What `Simulation.run` measured: per direction and level the pooled counters of every run, the
/// channels they ran over, and the level each direction recommends. The report layer turns it into
/// `simulate.json`; nothing here knows that document.
public struct SimulationResult: Sendable {
    /// Where the channels came from.
    public enum Source: Sendable {
        /// A fates file: its path and SHA-256 as read, the file's own description of its origin, the resolver chosen.
        case fates(file: String, sha256: String, description: String, resolver: String)
        case model(LossModel)
    }

    /// What one direction's data and feedback channels were built from.
    public enum ChannelSource: Sendable, Hashable, CustomStringConvertible {
        case stream(FateStream.Direction)
        case model

        public var description: String {
            switch self {
            case let .stream(direction): direction.rawValue
            case .model: "model"
            }
        }
    }

    /// Which stream carried data and which carried feedback, for one direction.
    public struct StreamUse: Sendable, Hashable {
        public var direction: SimulationRequest.Direction
        public var data: ChannelSource
        public var dataPackets: Int
        public var dataLoss: Double
        public var feedback: ChannelSource
        public var feedbackNote: String?
        /// Delivered packets without a measured delay that got the stream's median delay.
        public var delaysFilled: Int
    }

    /// Delay percentiles in milliseconds; p99 needs 100 samples and p99.9 needs 1,000 to be more than
    /// the maximum, so they are nil below that.
    public struct Percentiles: Sendable, Hashable {
        public var samples: Int
        public var p50: Double?
        public var p90: Double?
        public var p99: Double?
        public var p999: Double?
        public var max: Double?

        init(_ h: Histogram<UInt64>) {
            let n = Int(h.totalCount)
            samples = n
            guard n > 0 else { return }
            func ms(_ p: Double) -> Double { Double(h.valueAtPercentile(p)) / 1000 }
            p50 = ms(50)
            p90 = ms(90)
            p99 = n >= 100 ? ms(99) : nil
            p999 = n >= 1000 ? ms(99.9) : nil
            max = Double(h.max) / 1000
        }
    }

    /// One level in one direction, every run pooled.
    public struct Outcome: Sendable {
        public var direction: SimulationRequest.Direction
        public var level: FECLevel
        public var metrics: LinkMetrics

        /// Bytes on the wire (data, repair, retransmissions, feedback, headers) per useful byte delivered;
        /// nil when nothing was delivered.
        public var overhead: Double? {
            metrics.usefulBytes > 0 ? Double(metrics.dataBytes + metrics.feedbackBytes) / Double(metrics.usefulBytes) : nil
        }

        /// Useful bytes per second from the first offer to the last release; nil when nothing was delivered.
        public var goodputBytesPerSecond: Double? {
            let duration = metrics.lastReleaseMs - (metrics.firstOfferMs.isFinite ? metrics.firstOfferMs : 0)
            return duration > 0 && metrics.usefulBytes > 0 ? Double(metrics.usefulBytes) / (duration / 1000) : nil
        }

        /// Offer to first arrival at the receiver.
        public var delay: Percentiles { Percentiles(metrics.delay) }
        public var inOrderDelay: Percentiles { Percentiles(metrics.inOrderDelay) }
        public var headOfLine: Percentiles { Percentiles(metrics.headOfLine) }
    }

    public struct Recommendation: Sendable, Hashable {
        public var direction: SimulationRequest.Direction
        public var level: String
        public var withinBudget: Bool
        public var reason: String
    }

    public var request: SimulationRequest
    public var source: Source
    /// One per direction simulated, in order.
    public var streams: [StreamUse]
    public var opportunitiesPerRun: Int
    /// Per direction, per level in the order asked; a level whose runs were interrupted is left out.
    public var outcomes: [Outcome]
    /// One per direction that had a measured level.
    public var recommendations: [Recommendation]

    /// Groups encoded and decoded through ISA-L to check the simulator's bookkeeping, and how many disagreed.
    public var groupsVerified: Int { outcomes.reduce(0) { $0 + $1.metrics.verification.groups } }
    public var verificationMismatches: Int { outcomes.reduce(0) { $0 + $1.metrics.verification.mismatches } }
}
