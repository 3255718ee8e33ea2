public import Base
public import FEC
public import Fates
import Dispatch
import Foundation
import Histogram
import Synchronization

/// Everything `tunnelprobe simulate` was asked to do.
public struct SimulationRequest: Sendable {
    public enum Source: Sendable {
        case fates(FateTrace, file: String, sha256: String)
        case model(LossModel)
    }

    /// Which way the simulated data flows, in the words of `--direction` and of `simulate.json`:
    /// `download` is data on `down` (its feedback on `up`), `upload` the other way round, `both` each in turn.
    public enum Transfer: Sendable, Hashable, CaseIterable, RawRepresentable {
        case oneWay(Direction)
        case both

        public static let download = Transfer.oneWay(.down)
        public static let upload = Transfer.oneWay(.up)
        public static let allCases: [Transfer] = [.download, .upload, .both]

        /// The data directions simulated, in report order.
        public var directions: [Direction] {
            switch self {
            case let .oneWay(d): [d]
            case .both: [.down, .up]
            }
        }

        public var rawValue: String {
            switch self {
            case .oneWay(.down): "download"
            case .oneWay(.up): "upload"
            case .both: "both"
            }
        }

        public init?(rawValue: String) {
            guard let transfer = Self.allCases.first(where: { $0.rawValue == rawValue }) else { return nil }
            self = transfer
        }
    }

    public var source: Source
    public var direction: Transfer = .download
    public var levels: [FECLevel] = FECLevel.presets
    public var arq = ARQConfiguration()
    public var traffic: TrafficPattern = .greedy
    public var symbolSize = 512
    public var headerBytes = 14
    /// Where `symbolSize` and `headerBytes` come from when an engine's model set them, e.g.
    /// "masterdnsvpn-go download frames at MTU 893"; nil when they are the flags' values.
    public var frameSource: String?
    public var feedbackEntryBytes = 2
    /// Data-channel opportunities per run; nil: one pass of the trace, or 100 000 for a model.
    public var opportunities: Int?
    public var runs = 5
    public var seed: UInt64 = 1
    public var verifyGroups = 200
    /// The user's own cap on bytes on the wire per useful byte (`--overhead-budget`); nil, the default:
    /// no cap. Goodput at the path's rate already pays for overhead, so the rule does not need one.
    public var overheadBudget: Double?
    /// The resolver whose streams to use; nil: the one with the most fates.
    public var resolver: String?

    public init(source: Source) {
        self.source = source
    }

    public static let defaultModelOpportunities = 100_000
}

/// Runs every level over every run and direction and writes the outcome table.
public enum Simulation {
    /// The channels of one direction: how to build the data and feedback channel of run `r`.
    struct Path: Sendable {
        var use: SimulationResult.StreamUse
        var channels: @Sendable (Int) -> (data: Channel, feedback: Channel)
        var defaultOpportunities: Int
    }

    public static func run(_ request: SimulationRequest, isCancelled: @escaping @Sendable () -> Bool = { false }) throws(SimulationError)
        -> SimulationResult
    {
        let directions = request.direction.directions
        let source: SimulationResult.Source
        var paths: [Path] = []
        switch request.source {
        case let .fates(trace, file, sha256):
            let resolver = try pickResolver(trace, wanted: request.resolver)
            for direction in directions { paths.append(try path(trace, resolver: resolver, direction: direction, runs: request.runs)) }
            source = .fates(file: file, sha256: sha256, description: "\(trace.source.kind): \(trace.source.description)",
                            resolver: resolver)
        case let .model(model):
            for direction in directions {
                let seed = request.seed
                paths.append(Path(
                    use: .init(direction: direction, data: .model, dataPackets: 0, dataLoss: model.meanLoss,
                               feedback: .model, feedbackNote: "the same model, an independent seeded sequence", delaysFilled: 0,
                               opportunitiesPerSecond: model.opportunitiesPerSecond),
                    channels: { r in
                        let s = seed &+ UInt64(r) &+ (direction == .up ? 0x5555 : 0)
                        return (Channel(model: model, seed: s), Channel(model: model, seed: s ^ 0xFEED_BACC))
                    },
                    defaultOpportunities: SimulationRequest.defaultModelOpportunities))
            }
            source = .model(model)
        }
        let opportunities = request.opportunities ?? paths[0].defaultOpportunities

        // Every (direction, level, run) is an independent transfer: run them on all cores, then pool the
        // runs of each level in order, so the report does not depend on scheduling.
        let jobs = directions.indices.flatMap { d in request.levels.indices.flatMap { l in (0..<request.runs).map { (d, l, $0) } } }
        let results = Mutex<[LinkMetrics?]>(Array(repeating: nil, count: jobs.count))
        let builders = paths.map(\.channels)
        DispatchQueue.concurrentPerform(iterations: jobs.count) { j in
            let (d, l, r) = jobs[j]
            if isCancelled() { return }
            let (data, feedback) = builders[d](r)
            var settings = LinkSimulator.Settings(
                level: request.levels[l], arq: request.arq, traffic: request.traffic, symbolSize: request.symbolSize,
                headerBytes: request.headerBytes, feedbackEntryBytes: request.feedbackEntryBytes,
                opportunities: opportunities, verifyGroups: request.verifyGroups, seed: request.seed &+ UInt64(r))
            settings.isCancelled = isCancelled
            var simulator = LinkSimulator(settings: settings, data: data, feedback: feedback)
            let metrics = simulator.run()
            if !metrics.interrupted { results.withLock { $0[j] = metrics } }
        }
        let done = results.withLock { $0 }
        var outcomes: [SimulationResult.Outcome] = []
        var recommendations: [SimulationResult.Recommendation] = []
        for (d, direction) in directions.enumerated() {
            var rows: [SimulationResult.Outcome] = []
            for (l, level) in request.levels.enumerated() {
                // A level shows only when every one of its runs finished (an interrupted run keeps the rest).
                let runs = jobs.indices.filter { jobs[$0].0 == d && jobs[$0].1 == l }.map { done[$0] }
                guard runs.allSatisfy({ $0 != nil }) else { continue }
                var total = LinkMetrics()
                for m in runs { total.add(m!) }
                rows.append(SimulationResult.Outcome(direction: direction, level: level, metrics: total, runs: runs.map { $0! }))
            }
            outcomes += rows
            if let rec = recommend(rows, budget: request.overheadBudget) { recommendations.append(rec) }
        }
        return SimulationResult(request: request, source: source, streams: paths.map(\.use), opportunitiesPerRun: opportunities,
                                outcomes: outcomes, recommendations: recommendations)
    }

    // MARK: Streams

    static func pickResolver(_ trace: FateTrace, wanted: String?) throws(SimulationError) -> String {
        if let wanted {
            guard trace.streams.contains(where: { $0.resolver == wanted }) else {
                throw .unknownResolver(wanted, have: Set(trace.streams.map(\.resolver)).sorted())
            }
            return wanted
        }
        var counts: [String: Int] = [:]
        for s in trace.streams { counts[s.resolver, default: 0] += s.packets.count }
        return counts.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.first!.key
    }

    /// Download data rides `down` (or `roundTrip`), its feedback `up` (or `roundTrip`, half its delay);
    /// upload the other way round. docs/SIMULATE.md explains why.
    static func path(_ trace: FateTrace, resolver: String, direction: Direction, runs: Int) throws(SimulationError) -> Path {
        let streams = trace.streams.filter { $0.resolver == resolver }
        func stream(_ d: FateStream.Direction) -> FateStream? { streams.first { $0.direction == d } }
        let forward = FateStream.Direction.oneWay(direction)
        let backward = FateStream.Direction.oneWay(direction.reversed)
        guard let dataStream = stream(forward) ?? stream(.roundTrip) else {
            throw .noStream(direction: forward.rawValue, resolver: resolver)
        }
        var note: String?
        let feedbackStream: FateStream
        var scale = 1.0
        if let s = stream(backward) {
            feedbackStream = s
        } else if let s = stream(.roundTrip) {
            feedbackStream = s
            scale = 0.5
            note = "no \(backward.rawValue) stream: feedback takes the roundTrip fates (a lost round trip loses it) with half the round-trip delay"
        } else {
            feedbackStream = dataStream
            note = "no \(backward.rawValue) or roundTrip stream: feedback takes the data stream's own fates, half a trace apart"
        }
        let data = try fates(dataStream, scale: 1)
        let feedback = try fates(feedbackStream, scale: scale)
        let sameStream = feedbackStream == dataStream
        let use = SimulationResult.StreamUse(
            direction: direction, data: .stream(dataStream.direction), dataPackets: data.count, dataLoss: data.lossRate,
            feedback: .stream(feedbackStream.direction), feedbackNote: note, delaysFilled: data.delaysFilled + feedback.delaysFilled,
            opportunitiesPerSecond: Double(data.count) / (data.periodMs / 1000))
        return Path(use: use, channels: { r in
            // Run r starts r/runs of the way into the trace; feedback starts at the same moment of its own
            // stream (or half a trace further when it shares the data stream).
            let offset = r * data.count / max(runs, 1)
            let start = data.sentMs[offset]
            var feedbackOffset: Int
            if sameStream {
                feedbackOffset = (offset + data.count / 2) % data.count
            } else {
                feedbackOffset = firstIndex(feedback.sentMs, atOrAfter: start + dataStream.packets[0].sentMs - feedbackStream.packets[0].sentMs)
            }
            if feedbackOffset >= feedback.count { feedbackOffset = 0 }
            return (Channel(trace: data, offset: offset), Channel(trace: feedback, offset: feedbackOffset))
        }, defaultOpportunities: data.count)
    }

    static func fates(_ stream: FateStream, scale: Double) throws(SimulationError) -> TraceFates {
        do {
            return try TraceFates(packets: stream.packets.map { ($0.sentMs, $0.delivered, $0.delayMs) }, delayScale: scale)
        } catch {
            throw .unusableStream("\(stream.resolver) \(stream.direction.rawValue): \(error)")
        }
    }

    static func firstIndex(_ sorted: ContiguousArray<Double>, atOrAfter t: Double) -> Int {
        var lo = 0
        var hi = sorted.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if sorted[mid] < t { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    // MARK: Recommendation

    /// The rule, as the report states it.
    public static let recommendationRule = """
        The level is chosen on what the user of the tunnel feels. Keep the levels tied with the best on \
        residual loss (after FEC + ARQ; FEC alone when ARQ is off), then on total stall time, then on the \
        longest stall, then on in-order delivery delay p99, then on goodput at the path's own rate (goodput \
        already pays for every byte of repair and feedback, so overhead is not counted a second time); only \
        between levels tied on every one of these, the least overhead (it leaves the most of the path to \
        other traffic). Two figures are tied when they differ by less than 1.96 standard errors of the \
        difference: for residual loss the cluster-robust error over FEC groups, for the others the spread \
        of the per-run figures (runs with different seeds). An overhead cap applies only when the user sets \
        one (--overhead-budget, off by default): levels above it are dropped first, and the report says \
        what the rule picks without the cap when that differs.
        """

    /// One step of the rule: a figure per level, which way is better, and its standard error.
    public struct Criterion: Sendable {
        public var name: String
        public var unit: String
        public var higherIsBetter: Bool
        public var value: @Sendable (SimulationResult.Outcome) -> Double?
        public var standardError: @Sendable (SimulationResult.Outcome) -> Double
    }

    /// The criteria in the rule's order.
    public static let criteria: [Criterion] = {
        /// The pooled figure is a sum over runs for stall time, a per-run-like figure otherwise.
        func replicationSE(_ f: @escaping @Sendable (LinkMetrics) -> Double?, scaleByRuns: Bool = false)
            -> @Sendable (SimulationResult.Outcome) -> Double
        {
            { o in
                let values = o.runs.compactMap(f)
                let se = ReplicationMean(values).standardError ?? 0
                return scaleByRuns ? se * Double(values.count) : se
            }
        }
        return [
            Criterion(name: "residual loss", unit: "", higherIsBetter: false,
                      value: { $0.metrics.originals > 0 ? Double($0.metrics.lost) / Double($0.metrics.originals) : nil },
                      standardError: { $0.metrics.lostClusters.variance.map { $0.squareRoot() } ?? 0 }),
            Criterion(name: "total stall time", unit: "ms", higherIsBetter: false, value: { $0.metrics.stallTotalMs },
                      standardError: replicationSE({ $0.stallTotalMs }, scaleByRuns: true)),
            Criterion(name: "longest stall", unit: "ms", higherIsBetter: false, value: { $0.metrics.stallMaxMs },
                      standardError: replicationSE({ $0.stallMaxMs })),
            Criterion(name: "in-order delay p99", unit: "ms", higherIsBetter: false, value: { $0.metrics.inOrderP99Ms },
                      standardError: replicationSE({ $0.inOrderP99Ms })),
            Criterion(name: "goodput", unit: "B/s", higherIsBetter: true, value: { $0.goodputBytesPerSecond },
                      standardError: replicationSE({ $0.goodputBytesPerSecond })),
        ]
    }()

    static func format(_ x: Double, _ c: Criterion) -> String {
        switch c.unit {
        case "": return x == 0 ? "0" : (x >= 0.001 ? String(format: "%.4f", x) : String(format: "%.1e", x))
        case "ms": return String(format: "%.0f ms", x)
        default: return String(format: "%.0f B/s", x)
        }
    }

    /// Applies the rule (`recommendationRule`) to the levels of one direction; `budget` is the user's
    /// own overhead cap (nil: none).
    static func recommend(_ rows: [SimulationResult.Outcome], budget: Double?) -> SimulationResult.Recommendation? {
        let measured = rows.filter { $0.overhead != nil }
        guard let direction = rows.first?.direction, !measured.isEmpty else { return nil }
        func f2(_ x: Double) -> String { String(format: "%.2f", x) }
        let cap = budget ?? .infinity
        let fitting = measured.filter { $0.overhead! <= cap }
        let dropped = measured.filter { $0.overhead! > cap }.map { SimulationResult.Dropped(level: $0.level.name, overhead: $0.overhead!) }
        let droppedText = dropped.isEmpty ? "" : " Dropped by your overhead budget of \(f2(cap)): "
            + dropped.map { "\($0.level) (\(f2($0.overhead)))" }.joined(separator: ", ") + "."
        let free = pick(measured).best.level.name
        guard !fitting.isEmpty else {
            let cheapest = measured.min { $0.overhead! < $1.overhead! }!
            var rec = SimulationResult.Recommendation(
                direction: direction, level: cheapest.level.name, withinBudget: false,
                reason: "No level stays within your overhead budget of \(f2(cap)) bytes per useful byte; \(cheapest.level.name) costs least (\(f2(cheapest.overhead!))).\(droppedText)")
            rec.dropped = dropped
            if free != cheapest.level.name {
                rec.withoutBudget = free
                rec.reason += " The budget changed the answer: without it the rule picks \(free)."
            }
            return rec
        }
        let choice = pick(fitting)
        let best = choice.best
        var parts: [String] = []
        for (i, step) in choice.steps.enumerated() {
            let c = step.criterion
            let runnerUp = step.excluded.sorted { a, b in
                let (x, y) = (c.value(a) ?? .infinity, c.value(b) ?? .infinity)
                return c.higherIsBetter ? x > y : x < y
            }.first!
            let words = (i == 0 ? "" : "then ") + (c.higherIsBetter ? "the highest" : "the lowest")
            let out = step.excluded.map(\.level.name).joined(separator: ", ")
            parts.append("\(words) \(c.name) (\(format(c.value(best) ?? 0, c)) vs \(format(c.value(runnerUp) ?? 0, c)) for \(runnerUp.level.name); \(out) left out beyond the noise)")
        }
        var reason = best.level.name
        if fitting.count == 1 {
            reason += " is the only level within your budget"
        } else {
            reason += parts.isEmpty ? " ties with every other level on every figure (within the noise)" : " has " + parts.joined(separator: ", ")
        }
        if !choice.tied.isEmpty {
            reason += "; tied on every figure with \(choice.tied.joined(separator: ", ")), it costs least"
        }
        reason += ", at \(f2(best.overhead!)) bytes on the wire per useful byte.\(droppedText)"
        var rec = SimulationResult.Recommendation(direction: direction, level: best.level.name, withinBudget: true, reason: reason)
        rec.decidedBy = choice.steps.last?.criterion.name
        rec.tiedWith = choice.tied
        rec.dropped = dropped
        if free != best.level.name {
            rec.withoutBudget = free
            rec.reason += " The budget changed the answer: without it the rule picks \(free)."
        }
        return rec
    }

    /// A criterion that left some levels out.
    struct Step {
        var criterion: Criterion
        var excluded: [SimulationResult.Outcome]
    }

    /// Filters by each criterion in turn; returns the winner (least overhead of the survivors), the
    /// survivors it beat on overhead alone, and the steps that left levels out.
    static func pick(_ rows: [SimulationResult.Outcome]) -> (best: SimulationResult.Outcome, tied: [String], steps: [Step]) {
        var alive = rows
        var steps: [Step] = []
        for c in criteria where alive.count > 1 {
            let withValue = alive.filter { c.value($0) != nil }
            guard !withValue.isEmpty else { continue }
            let top = withValue.min { a, b in c.higherIsBetter ? c.value(a)! > c.value(b)! : c.value(a)! < c.value(b)! }!
            let topValue = c.value(top)!
            let topSE = c.standardError(top)
            let keep = withValue.filter { row in
                let v = c.value(row)!
                let se = c.standardError(row)
                return abs(v - topValue) <= 1.96 * (se * se + topSE * topSE).squareRoot()
            }
            if keep.count < alive.count {
                let kept = Set(keep.map(\.level.name))
                steps.append(Step(criterion: c, excluded: alive.filter { !kept.contains($0.level.name) }))
                alive = keep
            }
        }
        let best = alive.min { ($0.overhead ?? .infinity) < ($1.overhead ?? .infinity) }!
        return (best, alive.filter { $0.level.name != best.level.name }.map(\.level.name), steps)
    }
}
