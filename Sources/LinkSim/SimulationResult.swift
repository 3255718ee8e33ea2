public import Base
public import FEC
public import Fates
import Histogram
public import Results

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
        public var direction: Direction
        public var data: ChannelSource
        public var dataPackets: Int
        public var dataLoss: Double
        public var feedback: ChannelSource
        public var feedbackNote: String?
        /// Delivered packets without a measured delay that got the stream's median delay.
        public var delaysFilled: Int
        /// The data channel's opportunities per second: the trace's packets per period, or the model's rate.
        public var opportunitiesPerSecond: Double? = nil
    }

    /// Delay percentiles in milliseconds (the shared `Percentiles`, Results/Statistics).
    public typealias Percentiles = Results.Percentiles

    /// One level in one direction, every run pooled.
    public struct Outcome: Sendable {
        public var direction: Direction
        public var level: FECLevel
        public var metrics: LinkMetrics
        /// Each run's own counters (replications with seeds seed + i), in run order.
        public var runs: [LinkMetrics] = []

        public init(direction: Direction, level: FECLevel, metrics: LinkMetrics, runs: [LinkMetrics] = []) {
            self.direction = direction
            self.level = level
            self.metrics = metrics
            self.runs = runs
        }

        public var overhead: Double? { metrics.overhead }
        public var goodputBytesPerSecond: Double? { metrics.goodputBytesPerSecond }

        /// The groups the framer really formed: (originals k', repair m', how many), by k'.
        public var groupSizes: [(k: Int, m: Int, groups: Int)] {
            metrics.groupSizes.enumerated().filter { $0.element > 0 }.map { ($0.offset, level.repairCount(originals: $0.offset), $0.element) }
        }

        /// Offer to first arrival at the receiver.
        public var delay: Percentiles { Percentiles(metrics.delay) }
        public var inOrderDelay: Percentiles { Percentiles(metrics.inOrderDelay) }
        public var headOfLine: Percentiles { Percentiles(metrics.headOfLine) }
    }

    public struct Recommendation: Sendable, Hashable {
        public var direction: Direction
        public var level: String
        public var withinBudget: Bool
        public var reason: String
        /// The metric that separated the level from the rest (`Simulation.Criterion`), nil when only overhead did.
        public var decidedBy: String?
        /// Levels tied with it on every criterion the rule reached (within the noise), settled by overhead.
        public var tiedWith: [String] = []
        /// Levels left out by the user's overhead budget, with the overhead that dropped them.
        public var dropped: [Dropped] = []
        /// What the rule picks with no budget, when that is another level: the budget changed the answer.
        public var withoutBudget: String?
    }

    public struct Dropped: Sendable, Hashable {
        public var level: String
        public var overhead: Double
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

extension Percentiles {
    /// Delay percentiles in milliseconds from a histogram of microseconds; p99 needs 100 samples and
    /// p99.9 needs 1,000 to be more than the maximum, so they are nil below that.
    init(_ h: Histogram<UInt64>) {
        let n = Int(h.totalCount)
        guard n > 0 else {
            self.init(samples: n)
            return
        }
        func ms(_ p: Double) -> Double { Double(h.valueAtPercentile(p)) / 1000 }
        self.init(samples: n, p50: ms(50), p90: ms(90), p99: n >= 100 ? ms(99) : nil, p999: n >= 1000 ? ms(99.9) : nil,
                  max: Double(h.max) / 1000)
    }
}
