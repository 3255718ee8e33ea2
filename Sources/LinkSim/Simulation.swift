import Base
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

    public enum Direction: String, Sendable, CaseIterable {
        case download, upload, both
    }

    public var source: Source
    public var direction: Direction = .download
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
    /// Largest bytes-on-the-wire per useful byte the recommendation may pick.
    public var overheadBudget = 1.5
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
        let directions: [SimulationRequest.Direction] = request.direction == .both ? [.download, .upload] : [request.direction]
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
                               feedback: .model, feedbackNote: "the same model, an independent seeded sequence", delaysFilled: 0),
                    channels: { r in
                        let s = seed &+ UInt64(r) &+ (direction == .upload ? 0x5555 : 0)
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
                rows.append(SimulationResult.Outcome(direction: direction, level: level, metrics: total))
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
    static func path(_ trace: FateTrace, resolver: String, direction: SimulationRequest.Direction, runs: Int) throws(SimulationError) -> Path {
        let streams = trace.streams.filter { $0.resolver == resolver }
        func stream(_ d: FateStream.Direction) -> FateStream? { streams.first { $0.direction == d } }
        let forward: FateStream.Direction = direction == .upload ? .up : .down
        let backward: FateStream.Direction = direction == .upload ? .down : .up
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
            feedback: .stream(feedbackStream.direction), feedbackNote: note, delaysFilled: data.delaysFilled + feedback.delaysFilled)
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

    /// The level with the lowest p99 delivery delay whose overhead fits the budget (ties: less overhead).
    static func recommend(_ rows: [SimulationResult.Outcome], budget: Double) -> SimulationResult.Recommendation? {
        let measured = rows.compactMap { row in row.delay.p99.flatMap { p99 in row.overhead.map { (row, p99, $0) } } }
        guard let direction = rows.first?.direction, !measured.isEmpty else { return nil }
        let fitting = measured.filter { $0.2 <= budget }
        func f(_ x: Double) -> String { String(format: "%.1f", x) }
        guard let best = fitting.min(by: { ($0.1, $0.2) < ($1.1, $1.2) }) else {
            let cheapest = measured.min { $0.2 < $1.2 }!
            return .init(direction: direction, level: cheapest.0.level.name, withinBudget: false,
                         reason: "No level stays within the overhead budget of \(f(budget)) bytes per useful byte; \(cheapest.0.level.name) costs least (\(String(format: "%.2f", cheapest.2))).")
        }
        let others = fitting.filter { $0.0.level.name != best.0.level.name }
        var reason = "\(best.0.level.name) has the lowest p99 delivery delay (\(f(best.1)) ms"
        if let next = others.min(by: { $0.1 < $1.1 }) {
            reason += " vs \(f(next.1)) ms for \(next.0.level.name)"
        }
        reason += ") at \(String(format: "%.2f", best.2)) bytes on the wire per useful byte, within the budget of \(f(budget))."
        return .init(direction: direction, level: best.0.level.name, withinBudget: true, reason: reason)
    }
}
