public import FEC
public import Reports
import Dispatch
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
        var use: SimulateReport.StreamUse
        var channels: @Sendable (Int) -> (data: Channel, feedback: Channel)
        var defaultOpportunities: Int
    }

    public static func run(_ request: SimulationRequest, info: RunInfo, isCancelled: @escaping @Sendable () -> Bool = { false }) throws(SimulationError)
        -> SimulateReport
    {
        let directions: [SimulationRequest.Direction] = request.direction == .both ? [.download, .upload] : [request.direction]
        var input: SimulateReport.Input
        var paths: [Path] = []
        switch request.source {
        case let .fates(trace, file, sha256):
            let resolver = try pickResolver(trace, wanted: request.resolver)
            for direction in directions { paths.append(try path(trace, resolver: resolver, direction: direction, runs: request.runs)) }
            input = .init(kind: "fates", file: file, sha256: sha256,
                          fatesSource: "\(trace.source.kind): \(trace.source.description)", resolver: resolver,
                          streams: paths.map(\.use), seed: request.seed, runs: request.runs, opportunitiesPerRun: 0)
        case let .model(model):
            for direction in directions {
                let seed = request.seed
                paths.append(Path(
                    use: .init(direction: direction.rawValue, data: "model", dataPackets: 0, dataLoss: model.meanLoss,
                               feedback: "model", feedbackNote: "the same model, an independent seeded sequence", delaysFilled: 0),
                    channels: { r in
                        let s = seed &+ UInt64(r) &+ (direction == .upload ? 0x5555 : 0)
                        return (Channel(model: model, seed: s), Channel(model: model, seed: s ^ 0xFEED_BACC))
                    },
                    defaultOpportunities: SimulationRequest.defaultModelOpportunities))
            }
            input = .init(kind: "model", streams: paths.map(\.use), model: model.description, modelLoss: model.meanLoss,
                          seed: request.seed, runs: request.runs, opportunitiesPerRun: 0)
        }
        let opportunities = request.opportunities ?? paths[0].defaultOpportunities
        input.opportunitiesPerRun = opportunities

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
        var levels: [SimulateReport.Level] = []
        var recommendations: [SimulateReport.Recommendation] = []
        var verified = 0
        var mismatches = 0
        for (d, direction) in directions.enumerated() {
            var rows: [SimulateReport.Level] = []
            for (l, level) in request.levels.enumerated() {
                // A level shows only when every one of its runs finished (an interrupted run keeps the rest).
                let runs = jobs.indices.filter { jobs[$0].0 == d && jobs[$0].1 == l }.map { done[$0] }
                guard runs.allSatisfy({ $0 != nil }) else { continue }
                var total = LinkMetrics()
                for m in runs { total.add(m!) }
                verified += total.verification.groups
                mismatches += total.verification.mismatches
                rows.append(row(direction: direction.rawValue, level: level, metrics: total, arq: request.arq.enabled))
            }
            levels += rows
            if let rec = recommend(rows, budget: request.overheadBudget) { recommendations.append(rec) }
        }
        let a = request.arq
        let settings = SimulateReport.Settings(
            direction: request.direction.rawValue, traffic: request.traffic.description, symbolSize: request.symbolSize,
            headerBytes: request.headerBytes, feedbackEntryBytes: request.feedbackEntryBytes,
            overheadBudget: request.overheadBudget, verifyGroupsPerRun: request.verifyGroups,
            arq: .init(enabled: a.enabled, window: a.window, retryLimit: a.retryLimit, initialRTOMs: a.initialRTOMs,
                       minRTOMs: a.minRTOMs, maxRTOMs: a.maxRTOMs, backoffFactor: a.backoffFactor, nackDelayMs: a.nackDelayMs,
                       nackRepeatMs: a.nackRepeatMs, nackMaxGap: a.nackMaxGap, ackIntervalMs: a.ackIntervalMs))
        return SimulateReport(run: info, input: input, settings: settings, levels: levels, recommendations: recommendations,
                              isal: .init(library: "Intel ISA-L \(ReedSolomon.libraryVersion)", groupsVerified: verified,
                                          mismatches: mismatches, symbolSize: request.symbolSize))
    }

    // MARK: Streams

    static func pickResolver(_ trace: FateTrace, wanted: String?) throws(SimulationError) -> String {
        if let wanted {
            guard trace.streams.contains(where: { $0.resolver == wanted }) else {
                throw SimulationError("--resolver \(wanted): no stream for it in the fates file (have \(Set(trace.streams.map(\.resolver)).sorted().joined(separator: ", ")))")
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
            throw SimulationError("the fates file has no \(forward.rawValue) or roundTrip stream for \(resolver)")
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
        let use = SimulateReport.StreamUse(
            direction: direction.rawValue, data: dataStream.direction.rawValue, dataPackets: data.count, dataLoss: data.lossRate,
            feedback: feedbackStream.direction.rawValue, feedbackNote: note, delaysFilled: data.delaysFilled + feedback.delaysFilled)
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
            throw SimulationError("\(stream.resolver) \(stream.direction.rawValue): \(error.reason)")
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

    // MARK: Rows

    static func interval(_ count: Int, _ of: Int) -> SimulateReport.Interval? {
        WilsonInterval.bounds(successes: count, trials: of).map { .init(low: $0.low, high: $0.high, count: count, of: of) }
    }

    static func percentiles(_ h: Histogram<UInt64>) -> SimulateReport.Percentiles {
        let n = Int(h.totalCount)
        guard n > 0 else { return .init(samples: 0, p50: nil, p90: nil, p99: nil, p999: nil, max: nil) }
        func ms(_ p: Double) -> Double { Double(h.valueAtPercentile(p)) / 1000 }
        // p99.9 needs at least 1000 samples to be more than the maximum.
        return .init(samples: n, p50: ms(50), p90: ms(90), p99: n >= 100 ? ms(99) : nil, p999: n >= 1000 ? ms(99.9) : nil,
                     max: Double(h.max) / 1000)
    }

    static func row(direction: String, level: FECLevel, metrics t: LinkMetrics, arq: Bool) -> SimulateReport.Level {
        var notes: [String] = []
        let n = t.originals
        func rate(_ c: Int, _ of: Int) -> Double? { of > 0 ? Double(c) / Double(of) : nil }
        if n == 0 { notes.append("no packet was offered: every rate is null") }
        let overhead = t.usefulBytes > 0 ? Double(t.dataBytes + t.feedbackBytes) / Double(t.usefulBytes) : nil
        if overhead == nil && n > 0 { notes.append("overhead: nothing was delivered") }
        let duration = t.lastReleaseMs - (t.firstOfferMs.isFinite ? t.firstOfferMs : 0)
        let goodput = duration > 0 && t.usefulBytes > 0 ? Double(t.usefulBytes) / (duration / 1000) : nil
        let delay = percentiles(t.delay)
        if delay.samples > 0 && delay.samples < 100 { notes.append("delay p99 needs at least 100 delivered packets") }
        if !level.isEnabled { notes.append("no FEC: residual loss after FEC alone is the first-transmission loss") }
        if !arq { notes.append("ARQ off: nothing is retransmitted; a packet is lost once a window of newer ones has been sent") }
        let stalls = t.stalls
        let stallCount = Int(stalls.totalCount)
        var stallTotal = 0.0
        for v in stalls.recordedValues() { stallTotal += Double(v.value) * Double(v.count) / 1000 }
        let v = t.verification
        return SimulateReport.Level(
            direction: direction, level: level.name, k: level.k, m: level.m,
            flushTimeoutMs: level.isEnabled ? level.flushTimeoutMs : nil, originals: n, deliveredDirect: t.deliveredDirect,
            recoveredByFEC: t.rebuiltByFEC, repairedByARQ: t.repairedByARQ, lost: t.lost,
            firstTransmissionLoss: rate(t.firstTransmissionsLost, n), residualLossFEC: rate(t.residualLostFEC, n),
            residualLoss: rate(t.lost, n),
            intervals: .init(firstTransmissionLoss: interval(t.firstTransmissionsLost, n), residualLossFEC: interval(t.residualLostFEC, n),
                             residualLoss: interval(t.lost, n), groupFailure: interval(t.groupsFailedFEC, t.groups)),
            groups: .init(total: t.groups, failed: t.groupsFailedFEC, failureRate: rate(t.groupsFailedFEC, t.groups),
                          closedByFlushTimeout: t.groupsFlushed, repairSent: t.repairSent, repairUsed: t.repairUsed),
            retransmissions: .init(total: t.retransmissions, byNACK: t.retransmissionsByNACK, byRTO: t.retransmissionsByRTO,
                                   spurious: t.retransmissionsSpurious, needed: t.retransmissions - t.retransmissionsSpurious,
                                   timerExpiries: t.timerExpiries),
            feedback: .init(messages: t.feedbackMessages, lost: t.feedbackLost, ackEntries: t.ackEntries, nackEntries: t.nackEntries),
            bytes: .init(dataPackets: t.dataPackets, data: t.dataBytes, feedback: t.feedbackBytes, useful: t.usefulBytes),
            overhead: overhead, goodputBytesPerSecond: goodput, delayMs: delay, inOrderDelayMs: percentiles(t.inOrderDelay),
            headOfLineMs: percentiles(t.headOfLine),
            stallMs: .init(count: stallCount, totalMs: stallTotal, p50: stallCount > 0 ? Double(stalls.valueAtPercentile(50)) / 1000 : nil,
                           p99: stallCount >= 100 ? Double(stalls.valueAtPercentile(99)) / 1000 : nil,
                           max: stallCount > 0 ? Double(stalls.max) / 1000 : 0),
            opportunities: .init(passed: t.opportunitiesPassed, used: t.opportunitiesUsed, feedbackUsed: t.feedbackOpportunitiesUsed),
            isal: .init(groupsVerified: v.groups, mismatches: v.mismatches,
                        encodeMicrosPerGroup: v.groups > 0 ? Double(v.encodeNs) / Double(v.groups) / 1000 : nil,
                        decodeMicrosPerGroup: v.groups > 0 ? Double(v.decodeNs) / Double(v.groups) / 1000 : nil),
            notes: notes)
    }

    /// The level with the lowest p99 delivery delay whose overhead fits the budget (ties: less overhead).
    static func recommend(_ rows: [SimulateReport.Level], budget: Double) -> SimulateReport.Recommendation? {
        let measured = rows.filter { $0.delayMs.p99 != nil && $0.overhead != nil }
        guard let direction = rows.first?.direction, !measured.isEmpty else { return nil }
        let fitting = measured.filter { $0.overhead! <= budget }
        func f(_ x: Double) -> String { String(format: "%.1f", x) }
        guard let best = fitting.min(by: { ($0.delayMs.p99!, $0.overhead!) < ($1.delayMs.p99!, $1.overhead!) }) else {
            let cheapest = measured.min { $0.overhead! < $1.overhead! }!
            return .init(direction: direction, level: cheapest.level, withinBudget: false,
                         reason: "No level stays within the overhead budget of \(f(budget)) bytes per useful byte; \(cheapest.level) costs least (\(String(format: "%.2f", cheapest.overhead!))).")
        }
        let others = fitting.filter { $0.level != best.level }
        var reason = "\(best.level) has the lowest p99 delivery delay (\(f(best.delayMs.p99!)) ms"
        if let next = others.min(by: { $0.delayMs.p99! < $1.delayMs.p99! }) {
            reason += " vs \(f(next.delayMs.p99!)) ms for \(next.level)"
        }
        reason += ") at \(String(format: "%.2f", best.overhead!)) bytes on the wire per useful byte, within the budget of \(f(budget))."
        return .init(direction: direction, level: best.level, withinBudget: true, reason: reason)
    }
}
