/// `simulate.json`: the FEC level x ARQ outcome table for one path (a fates file or a loss model),
/// and the level it recommends.
public struct SimulateReport: Codable, Sendable, Hashable {
    /// /2: the recommendation follows a new rule (`recommendationRule`): residual loss, stalls, in-order
    /// delay and goodput instead of first-arrival p99. New fields (groupsFormed, clusterIntervals,
    /// replications, channel, the recommendation's dropped/tiedWith/decidedBy) are additive.
    public static let schemaName = "tunnelprobe.simulate/3"

    public var schema: String = SimulateReport.schemaName
    public var run: RunInfo
    public var input: Input
    public var settings: Settings
    /// One entry per direction and level, in the order asked.
    public var levels: [Level]
    /// The recommendation for the first direction simulated (download unless only upload was asked).
    public var recommendation: Recommendation?
    /// One per direction simulated.
    public var recommendations: [Recommendation]
    public var isal: ISAL
    /// How the recommendation is chosen, in words (the same rule for every direction).
    public var recommendationRule: String?

    public init(run: RunInfo, input: Input, settings: Settings, levels: [Level], recommendations: [Recommendation], isal: ISAL) {
        self.run = run
        self.input = input
        self.settings = settings
        self.levels = levels
        self.recommendation = recommendations.first
        self.recommendations = recommendations
        self.isal = isal
    }

    /// What the channel was built from.
    public struct Input: Codable, Sendable, Hashable {
        /// `fates` or `model`.
        public var kind: String
        public var file: String?
        /// SHA-256 (hex) of the fates file as read.
        public var sha256: String?
        /// The fates file's own `source` (who produced it, from what).
        public var fatesSource: String?
        public var resolver: String?
        /// Per direction simulated: which stream carried data and which carried feedback.
        public var streams: [StreamUse]
        public var model: String?
        /// Mean loss of the model (Bernoulli p; Gilbert-Elliott p / (p + r) x (1 - h)).
        public var modelLoss: Double?
        public var seed: UInt64
        public var runs: Int
        public var opportunitiesPerRun: Int
        /// Mean loss-period length of the model in packets (Gilbert-Elliott 1 / r), the nominal burst.
        public var modelMeanBurst: Double?

        public init(kind: String, file: String? = nil, sha256: String? = nil, fatesSource: String? = nil, resolver: String? = nil,
                    streams: [StreamUse] = [], model: String? = nil, modelLoss: Double? = nil, seed: UInt64, runs: Int,
                    opportunitiesPerRun: Int) {
            self.kind = kind
            self.file = file
            self.sha256 = sha256
            self.fatesSource = fatesSource
            self.resolver = resolver
            self.streams = streams
            self.model = model
            self.modelLoss = modelLoss
            self.seed = seed
            self.runs = runs
            self.opportunitiesPerRun = opportunitiesPerRun
        }
    }

    public struct StreamUse: Codable, Sendable, Hashable {
        /// `download` or `upload`.
        public var direction: String
        /// The fates stream direction carrying data (`down`, `up` or `roundTrip`).
        public var data: String
        public var dataPackets: Int
        public var dataLoss: Double
        /// The fates stream carrying ACKs and NACKs, and how its delay was used.
        public var feedback: String
        public var feedbackNote: String?
        /// Delivered packets without a measured delay that got the stream's median delay.
        public var delaysFilled: Int
        /// The data channel's opportunities per second (the trace's own rate, or the model's `rate`):
        /// the packet rate at which groups are formed.
        public var opportunitiesPerSecond: Double?

        public init(direction: String, data: String, dataPackets: Int, dataLoss: Double, feedback: String,
                    feedbackNote: String? = nil, delaysFilled: Int) {
            self.direction = direction
            self.data = data
            self.dataPackets = dataPackets
            self.dataLoss = dataLoss
            self.feedback = feedback
            self.feedbackNote = feedbackNote
            self.delaysFilled = delaysFilled
        }
    }

    public struct Settings: Codable, Sendable, Hashable {
        /// `download`, `upload` or `both`.
        public var direction: String
        public var traffic: String
        public var symbolSize: Int
        public var headerBytes: Int
        /// The engine model that sized the symbols and headers (`simulate --engine E --mtu N`): FEC
        /// groups that engine's frames; nil when `--symbol-size` and `--header-bytes` did.
        public var frameSource: String?
        public var feedbackEntryBytes: Int
        /// The user's cap on bytes on the wire per useful byte (`--overhead-budget`); null: no cap (the
        /// default since the rule stopped counting overhead twice; earlier runs always carry 1.5).
        public var overheadBudget: Double?
        public var verifyGroupsPerRun: Int
        public var arq: ARQ

        public init(direction: String, traffic: String, symbolSize: Int, headerBytes: Int, feedbackEntryBytes: Int,
                    overheadBudget: Double?, verifyGroupsPerRun: Int, arq: ARQ) {
            self.direction = direction
            self.traffic = traffic
            self.symbolSize = symbolSize
            self.headerBytes = headerBytes
            self.feedbackEntryBytes = feedbackEntryBytes
            self.overheadBudget = overheadBudget
            self.verifyGroupsPerRun = verifyGroupsPerRun
            self.arq = arq
        }
    }

    public struct ARQ: Codable, Sendable, Hashable {
        public var enabled: Bool
        public var window: Int
        public var retryLimit: Int
        public var initialRTOMs: Double
        public var minRTOMs: Double
        public var maxRTOMs: Double
        public var backoffFactor: Double
        public var nackDelayMs: Double
        public var nackRepeatMs: Double
        public var nackMaxGap: Int
        public var ackIntervalMs: Double

        public init(enabled: Bool, window: Int, retryLimit: Int, initialRTOMs: Double, minRTOMs: Double, maxRTOMs: Double,
                    backoffFactor: Double, nackDelayMs: Double, nackRepeatMs: Double, nackMaxGap: Int, ackIntervalMs: Double) {
            self.enabled = enabled
            self.window = window
            self.retryLimit = retryLimit
            self.initialRTOMs = initialRTOMs
            self.minRTOMs = minRTOMs
            self.maxRTOMs = maxRTOMs
            self.backoffFactor = backoffFactor
            self.nackDelayMs = nackDelayMs
            self.nackRepeatMs = nackRepeatMs
            self.nackMaxGap = nackMaxGap
            self.ackIntervalMs = ackIntervalMs
        }
    }

    /// A proportion's 95 % Wilson score interval, with the counts it came from.
    public struct Interval: Codable, Sendable, Hashable {
        public var low: Double
        public var high: Double
        public var count: Int
        public var of: Int

        public init(low: Double, high: Double, count: Int, of: Int) {
            self.low = low
            self.high = high
            self.count = count
            self.of = of
        }
    }

    /// The shared `Percentiles` (Results/Statistics).
    public typealias Percentiles = Results.Percentiles

    public struct Stalls: Codable, Sendable, Hashable {
        public var count: Int
        public var totalMs: Double
        public var p50: Double?
        public var p99: Double?
        /// 0 when the receiver never stalled.
        public var max: Double

        public init(count: Int, totalMs: Double, p50: Double?, p99: Double?, max: Double) {
            self.count = count
            self.totalMs = totalMs
            self.p50 = p50
            self.p99 = p99
            self.max = max
        }
    }

    public struct Level: Codable, Sendable, Hashable {
        public var direction: String
        public var level: String
        public var k: Int
        public var m: Int
        public var flushTimeoutMs: Double?
        /// Originals sent (the denominator of the loss rates).
        public var originals: Int
        public var deliveredDirect: Int
        public var recoveredByFEC: Int
        public var repairedByARQ: Int
        /// Given up after the retry limit (or, without ARQ, never delivered).
        public var lost: Int
        /// Loss of first transmissions, what the path did before any repair.
        public var firstTransmissionLoss: Double?
        /// Share of originals FEC alone could not deliver (first transmissions and repair symbols only).
        public var residualLossFEC: Double?
        /// Share of originals lost after FEC and ARQ.
        public var residualLoss: Double?
        public var intervals: Intervals
        public var groups: Groups
        public var retransmissions: Retransmissions
        public var feedback: Feedback
        public var bytes: Bytes
        /// Bytes on the wire (data, repair, retransmissions, ACKs and NACKs, headers) per useful byte delivered.
        public var overhead: Double?
        public var goodputBytesPerSecond: Double?
        /// Offer to first arrival at the receiver, ms.
        public var delayMs: Percentiles
        /// Offer to in-order release, ms.
        public var inOrderDelayMs: Percentiles
        /// Time packets waited behind a missing one (only those that waited), ms.
        public var headOfLineMs: Percentiles
        public var stallMs: Stalls
        public var opportunities: Opportunities
        public var isal: LevelISAL
        /// Why a figure is null, and anything else a reader must know about this row.
        public var notes: [String]
        /// The groups the framer really formed, next to the nominal k+m.
        public var groupsFormed: GroupsFormed?
        /// Intervals that count lost packets by the groups they fail in (the /1 `intervals` treat them as independent).
        public var clusterIntervals: ClusterIntervals?
        /// Per-run figures (runs with seeds seed + i): mean and Student-t 95 % interval.
        public var replications: Replications?
        /// What the data channel did to the datagrams this level sent.
        public var channel: ChannelFigures?

        public init(direction: String, level: String, k: Int, m: Int, flushTimeoutMs: Double?, originals: Int, deliveredDirect: Int,
                    recoveredByFEC: Int, repairedByARQ: Int, lost: Int, firstTransmissionLoss: Double?, residualLossFEC: Double?,
                    residualLoss: Double?, intervals: Intervals, groups: Groups, retransmissions: Retransmissions,
                    feedback: Feedback, bytes: Bytes, overhead: Double?, goodputBytesPerSecond: Double?, delayMs: Percentiles,
                    inOrderDelayMs: Percentiles, headOfLineMs: Percentiles, stallMs: Stalls, opportunities: Opportunities,
                    isal: LevelISAL, notes: [String]) {
            self.direction = direction
            self.level = level
            self.k = k
            self.m = m
            self.flushTimeoutMs = flushTimeoutMs
            self.originals = originals
            self.deliveredDirect = deliveredDirect
            self.recoveredByFEC = recoveredByFEC
            self.repairedByARQ = repairedByARQ
            self.lost = lost
            self.firstTransmissionLoss = firstTransmissionLoss
            self.residualLossFEC = residualLossFEC
            self.residualLoss = residualLoss
            self.intervals = intervals
            self.groups = groups
            self.retransmissions = retransmissions
            self.feedback = feedback
            self.bytes = bytes
            self.overhead = overhead
            self.goodputBytesPerSecond = goodputBytesPerSecond
            self.delayMs = delayMs
            self.inOrderDelayMs = inOrderDelayMs
            self.headOfLineMs = headOfLineMs
            self.stallMs = stallMs
            self.opportunities = opportunities
            self.isal = isal
            self.notes = notes
        }
    }

    public struct GroupSize: Codable, Sendable, Hashable {
        public var k: Int
        public var m: Int
        public var groups: Int

        public init(k: Int, m: Int, groups: Int) {
            self.k = k
            self.m = m
            self.groups = groups
        }
    }

    public struct GroupsFormed: Codable, Sendable, Hashable {
        /// The level's label, e.g. `12+3`.
        public var nominal: String
        public var meanK: Double?
        public var meanM: Double?
        /// Every k'+m' that occurred, by k'.
        public var sizes: [GroupSize]
        public var closedByFlushTimeout: Int
        public var total: Int

        public init(nominal: String, meanK: Double? = nil, meanM: Double? = nil, sizes: [GroupSize],
                    closedByFlushTimeout: Int, total: Int) {
            self.nominal = nominal
            self.meanK = meanK
            self.meanM = meanM
            self.sizes = sizes
            self.closedByFlushTimeout = closedByFlushTimeout
            self.total = total
        }
    }

    /// A proportion's 95 % interval that counts events by cluster (Korn-Graubard: Clopper-Pearson on
    /// n / deff), or Clopper-Pearson over independent units.
    public struct ClusterInterval: Codable, Sendable, Hashable {
        public var low: Double
        public var high: Double
        public var count: Int
        public var of: Int
        public var clusters: Int
        /// Kish's design effect (>= 1); null when it cannot be estimated (no event).
        public var designEffect: Double?
        public var method: String

        public init(low: Double, high: Double, count: Int, of: Int, clusters: Int, designEffect: Double? = nil,
                    method: String) {
            self.low = low
            self.high = high
            self.count = count
            self.of = of
            self.clusters = clusters
            self.designEffect = designEffect
            self.method = method
        }
    }

    public struct ClusterIntervals: Codable, Sendable, Hashable {
        public var residualLossFEC: ClusterInterval?
        public var residualLoss: ClusterInterval?
        public var groupFailure: ClusterInterval?
        /// What the clusters are.
        public var clusters: String

        public init(residualLossFEC: ClusterInterval? = nil, residualLoss: ClusterInterval? = nil,
                    groupFailure: ClusterInterval? = nil, clusters: String) {
            self.residualLossFEC = residualLossFEC
            self.residualLoss = residualLoss
            self.groupFailure = groupFailure
            self.clusters = clusters
        }
    }

    public struct Replicated: Codable, Sendable, Hashable {
        public var mean: Double
        public var low: Double?
        public var high: Double?

        public init(mean: Double, low: Double? = nil, high: Double? = nil) {
            self.mean = mean
            self.low = low
            self.high = high
        }
    }

    public struct Replications: Codable, Sendable, Hashable {
        public var runs: Int
        public var residualLossFEC: Replicated?
        public var residualLoss: Replicated?
        public var groupFailure: Replicated?
        public var stallTotalMs: Replicated?
        public var stallMaxMs: Replicated?
        public var inOrderP99Ms: Replicated?
        public var goodputBytesPerSecond: Replicated?

        public init(runs: Int, residualLossFEC: Replicated? = nil, residualLoss: Replicated? = nil,
                    groupFailure: Replicated? = nil, stallTotalMs: Replicated? = nil, stallMaxMs: Replicated? = nil,
                    inOrderP99Ms: Replicated? = nil, goodputBytesPerSecond: Replicated? = nil) {
            self.runs = runs
            self.residualLossFEC = residualLossFEC
            self.residualLoss = residualLoss
            self.groupFailure = groupFailure
            self.stallTotalMs = stallTotalMs
            self.stallMaxMs = stallMaxMs
            self.inOrderP99Ms = inOrderP99Ms
            self.goodputBytesPerSecond = goodputBytesPerSecond
        }
    }

    public struct LossPeriod: Codable, Sendable, Hashable {
        public var length: Int
        public var count: Int

        public init(length: Int, count: Int) {
            self.length = length
            self.count = count
        }
    }

    /// RFC 3357 loss periods and the Gilbert fit of the fates the level's datagrams met.
    public struct ChannelFigures: Codable, Sendable, Hashable {
        public var datagrams: Int
        public var lost: Int
        public var loss: Double?
        public var lossPeriods: Int
        public var meanLossPeriod: Double?
        /// Loss-period lengths 1...16 one by one, then one entry of length 17 for every longer period.
        public var lossPeriodLengths: [LossPeriod]
        public var gilbert: GilbertFit

        public init(datagrams: Int, lost: Int, loss: Double? = nil, lossPeriods: Int, meanLossPeriod: Double? = nil,
                    lossPeriodLengths: [LossPeriod], gilbert: GilbertFit) {
            self.datagrams = datagrams
            self.lost = lost
            self.loss = loss
            self.lossPeriods = lossPeriods
            self.meanLossPeriod = meanLossPeriod
            self.lossPeriodLengths = lossPeriodLengths
            self.gilbert = gilbert
        }
    }

    public struct Intervals: Codable, Sendable, Hashable {
        public var firstTransmissionLoss: Interval?
        public var residualLossFEC: Interval?
        public var residualLoss: Interval?
        public var groupFailure: Interval?

        public init(firstTransmissionLoss: Interval?, residualLossFEC: Interval?, residualLoss: Interval?, groupFailure: Interval?) {
            self.firstTransmissionLoss = firstTransmissionLoss
            self.residualLossFEC = residualLossFEC
            self.residualLoss = residualLoss
            self.groupFailure = groupFailure
        }
    }

    public struct Groups: Codable, Sendable, Hashable {
        public var total: Int
        /// Groups whose first transmissions and repair symbols left fewer than k symbols (FEC alone failed).
        public var failed: Int
        public var failureRate: Double?
        public var closedByFlushTimeout: Int
        public var repairSent: Int
        public var repairUsed: Int

        public init(total: Int, failed: Int, failureRate: Double?, closedByFlushTimeout: Int, repairSent: Int, repairUsed: Int) {
            self.total = total
            self.failed = failed
            self.failureRate = failureRate
            self.closedByFlushTimeout = closedByFlushTimeout
            self.repairSent = repairSent
            self.repairUsed = repairUsed
        }
    }

    public struct Retransmissions: Codable, Sendable, Hashable {
        public var total: Int
        public var byNACK: Int
        public var byRTO: Int
        /// Sent when the receiver already had the packet.
        public var spurious: Int
        public var needed: Int
        public var timerExpiries: Int

        public init(total: Int, byNACK: Int, byRTO: Int, spurious: Int, needed: Int, timerExpiries: Int) {
            self.total = total
            self.byNACK = byNACK
            self.byRTO = byRTO
            self.spurious = spurious
            self.needed = needed
            self.timerExpiries = timerExpiries
        }
    }

    public struct Feedback: Codable, Sendable, Hashable {
        public var messages: Int
        public var lost: Int
        public var ackEntries: Int
        public var nackEntries: Int

        public init(messages: Int, lost: Int, ackEntries: Int, nackEntries: Int) {
            self.messages = messages
            self.lost = lost
            self.ackEntries = ackEntries
            self.nackEntries = nackEntries
        }
    }

    public struct Bytes: Codable, Sendable, Hashable {
        public var dataPackets: Int
        public var data: Int
        public var feedback: Int
        public var useful: Int

        public init(dataPackets: Int, data: Int, feedback: Int, useful: Int) {
            self.dataPackets = dataPackets
            self.data = data
            self.feedback = feedback
            self.useful = useful
        }
    }

    public struct Opportunities: Codable, Sendable, Hashable {
        public var passed: Int
        public var used: Int
        public var feedbackUsed: Int

        public init(passed: Int, used: Int, feedbackUsed: Int) {
            self.passed = passed
            self.used = used
            self.feedbackUsed = feedbackUsed
        }
    }

    public struct LevelISAL: Codable, Sendable, Hashable {
        public var groupsVerified: Int
        public var mismatches: Int
        public var encodeMicrosPerGroup: Double?
        public var decodeMicrosPerGroup: Double?

        public init(groupsVerified: Int, mismatches: Int, encodeMicrosPerGroup: Double?, decodeMicrosPerGroup: Double?) {
            self.groupsVerified = groupsVerified
            self.mismatches = mismatches
            self.encodeMicrosPerGroup = encodeMicrosPerGroup
            self.decodeMicrosPerGroup = decodeMicrosPerGroup
        }
    }

    public struct Recommendation: Codable, Sendable, Hashable {
        public var direction: String
        public var level: String
        public var withinBudget: Bool
        public var reason: String
        /// The last criterion of the rule that left levels out (null: overhead alone decided).
        public var decidedBy: String?
        /// Levels tied with it on every criterion, beaten on overhead.
        public var tiedWith: [String]?
        /// Levels the overhead budget dropped, with their overhead.
        public var dropped: [Dropped]?
        /// What the rule picks with no budget, when another level.
        public var withoutBudget: String?
        /// True when the user's overhead budget changed the answer (then `withoutBudget` names the
        /// level the rule picks without it); false when there was no budget or it changed nothing.
        public var budgetChangedAnswer: Bool?

        public struct Dropped: Codable, Sendable, Hashable {
            public var level: String
            public var overhead: Double

            public init(level: String, overhead: Double) {
                self.level = level
                self.overhead = overhead
            }
        }

        public init(direction: String, level: String, withinBudget: Bool, reason: String) {
            self.direction = direction
            self.level = level
            self.withinBudget = withinBudget
            self.reason = reason
        }
    }

    public struct ISAL: Codable, Sendable, Hashable {
        public var library: String
        public var groupsVerified: Int
        public var mismatches: Int
        public var symbolSize: Int

        public init(library: String, groupsVerified: Int, mismatches: Int, symbolSize: Int) {
            self.library = library
            self.groupsVerified = groupsVerified
            self.mismatches = mismatches
            self.symbolSize = symbolSize
        }
    }
}
