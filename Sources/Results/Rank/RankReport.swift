public import Base

/// `rank.json`: each accepted pair's capacity (the knee of its paced query rate), the pairs ranked
/// by the data they move for each engine, and a plan for a target goodput (issue 19).
///
/// Definitions: loss is RFC 7680's (a query not answered within Tmax, the timeout), with a Wilson
/// 95 % interval; RTT is RFC 2681's round-trip delay, given as nearest-rank percentiles (RFC 2330
/// 6.6.1); the sustainable rate is RFC 2544 26.1's throughput (the highest offered rate whose step
/// lost no more than the allowed share); goodput is the engine's payload bytes one query carries
/// (its frame at the synced MTU, from the engine model) times the answered queries per second at
/// that rate: sustainable rate x (1 - loss ratio).
public struct RankReport: Codable, Sendable, Hashable {
    public static let schemaName = "tunnelprobe.rank/2"

    public var schema: String = RankReport.schemaName
    public var run: RunInfo
    /// The scan whose accepted pairs were measured.
    public var scan: RunInfo
    public var settings: CapacitySettings
    /// Every measured pair, in the order the scan lists them.
    public var pairs: [PairCapacity]
    /// Per engine: the pairs best first and, with `--target`, the plan.
    public var engines: [EngineRanking]
    /// Accepted pairs left unmeasured (the total budget ran out, or the run was stopped).
    public var notMeasured: [String]

    public init(run: RunInfo, scan: RunInfo, settings: CapacitySettings, pairs: [PairCapacity],
                engines: [EngineRanking], notMeasured: [String]) {
        self.run = run
        self.scan = scan
        self.settings = settings
        self.pairs = pairs
        self.engines = engines
        self.notMeasured = notMeasured
    }
}

/// One pair in one engine's units.
public struct RankedPair: Codable, Sendable, Hashable {
    public var rank: Int
    public var resolver: String
    public var domain: String
    public var sustainableRate: Double
    public var limitedBy: CapacityLimit
    public var lossRatio: Double
    public var rttP50Ms: Double?
    /// Engine payload bytes one query carries up (in its name) and down (in its answer).
    public var uploadBytesPerQuery: Int
    public var downloadBytesPerQuery: Int
    /// Expected goodput in bytes per second at the sustainable rate.
    public var uploadGoodput: Double
    public var downloadGoodput: Double

    public init(rank: Int, resolver: String, domain: String, sustainableRate: Double, limitedBy: CapacityLimit,
                lossRatio: Double, rttP50Ms: Double?, uploadBytesPerQuery: Int, downloadBytesPerQuery: Int,
                uploadGoodput: Double, downloadGoodput: Double) {
        self.rank = rank
        self.resolver = resolver
        self.domain = domain
        self.sustainableRate = sustainableRate
        self.limitedBy = limitedBy
        self.lossRatio = lossRatio
        self.rttP50Ms = rttP50Ms
        self.uploadBytesPerQuery = uploadBytesPerQuery
        self.downloadBytesPerQuery = downloadBytesPerQuery
        self.uploadGoodput = uploadGoodput
        self.downloadGoodput = downloadGoodput
    }
}

/// A set of resolvers that together move a target goodput.
public struct GoodputPlan: Codable, Sendable, Hashable {
    public struct Use: Codable, Sendable, Hashable {
        public var resolver: String
        public var domain: String
        /// The query rate to send it (at most its sustainable rate).
        public var rate: Double
        public var goodput: Double

        public init(resolver: String, domain: String, rate: Double, goodput: Double) {
            self.resolver = resolver
            self.domain = domain
            self.rate = rate
            self.goodput = goodput
        }
    }

    /// The direction the target is for (`down` unless `--target-direction up`).
    public var direction: Direction
    public var targetBytesPerSecond: Double
    public var reachable: Bool
    public var uses: [Use]
    public var totalGoodput: Double
    public var sentence: String

    public init(direction: Direction, targetBytesPerSecond: Double, reachable: Bool, uses: [Use], totalGoodput: Double,
                sentence: String) {
        self.direction = direction
        self.targetBytesPerSecond = targetBytesPerSecond
        self.reachable = reachable
        self.uses = uses
        self.totalGoodput = totalGoodput
        self.sentence = sentence
    }
}

public struct EngineRanking: Codable, Sendable, Hashable {
    public var engine: Engine
    public var name: String
    /// The synced values (the engine's own units) the goodput rests on.
    public var upload: Int?
    public var download: Int?
    public var uploadSetting: String?
    public var downloadSetting: String?
    public var pairs: [RankedPair]
    public var plan: GoodputPlan?
    /// The engine's files with the resolvers best first (and, with a plan, the plan's under `plan/`).
    public var exports: [ExportFile]
    public var planExports: [ExportFile]?

    public init(engine: Engine, name: String, upload: Int?, download: Int?, uploadSetting: String?, downloadSetting: String?,
                pairs: [RankedPair], plan: GoodputPlan?, exports: [ExportFile], planExports: [ExportFile]? = nil) {
        self.engine = engine
        self.name = name
        self.upload = upload
        self.download = download
        self.uploadSetting = uploadSetting
        self.downloadSetting = downloadSetting
        self.pairs = pairs
        self.plan = plan
        self.exports = exports
        self.planExports = planExports
    }
}
