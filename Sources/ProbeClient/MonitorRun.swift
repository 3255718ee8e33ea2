import Base
import EngineModels
import Foundation
import NIOConcurrencyHelpers
import OSLayer
public import Results

/// `monitor`'s loop: every `interval` seconds each watched pair is checked (at most `parallel` at
/// once), a failed check is diagnosed at once (down, or up with smaller sizes: MTU drift), rate
/// measurements run beside the checks on their own schedule (`RateSchedule`; a pair is not checked
/// while its rate is measured: the load would fail its check), every result goes to history.jsonl
/// as it comes (`MonitorHistory`), and each engine's resolver file is rewritten whenever the order
/// of the pairs that are up changes (`ResolverFileOrder`). It ends after `duration` seconds,
/// `checks` checks, or when its task is cancelled (a signal), and returns what it saw.
///
/// The checks and the measurements are closures (`Check`, `Measure`): `probing` and `measuring`
/// give the real ones, through a prober; tests give their own (MonitorRunTests).
public struct MonitorRun: Sendable {
    public struct Settings: Sendable {
        public var interval: Double
        public var duration: Double?
        public var checks: Int?
        public var attempts: Int
        public var parallel: Int
        public var rateInterval: Double?
        public var rateParallel: Int

        public init(interval: Double, duration: Double?, checks: Int?, attempts: Int, parallel: Int,
                    rateInterval: Double?, rateParallel: Int) {
            self.interval = interval
            self.duration = duration
            self.checks = checks
            self.attempts = attempts
            self.parallel = parallel
            self.rateInterval = rateInterval
            self.rateParallel = rateParallel
        }
    }

    /// What the loop saw, for the report.
    public struct State: Sendable {
        public var pairs: [PairStability]
        public var checks = 0
        public var rounds = 0
        public var rewrites = 0
        public var rewriteTimes: [Double] = []
        public var memory: [MonitorReport.MemorySample] = []
        /// Each engine's resolver file as last written (indices of pairs), nil before the first.
        public var lastOrders: [[Int]]?
        /// Why history.jsonl could not be written to the end, if it could not.
        public var historyFailure: String?
        public var elapsed = 0.0

        init(targets: [MonitorTarget]) {
            pairs = targets.map { PairStability(resolver: $0.name, domain: $0.zone.description, spare: $0.spare) }
        }
    }

    /// One check of pair `index`: its outcome and, when it failed, the sizes that still pass
    /// (nil: not diagnosed).
    public typealias Check = @Sendable (_ index: Int) async -> (outcome: ProbeOutcome, diagnosis: (queryCharacters: Int?, answerBytes: Int?)?)
    /// One rate measurement of pair `index`; nil when it was cut short (it is then left out).
    public typealias Measure = @Sendable (_ index: Int) async -> PairCapacity?

    public let targets: [MonitorTarget]
    public let settings: Settings
    /// The engines whose resolver files are kept current, and where they go (`exports/<engine>/`).
    public let engineScans: [EngineScan]
    public let directory: String

    public init(targets: [MonitorTarget], settings: Settings, engineScans: [EngineScan], directory: String) {
        self.targets = targets
        self.settings = settings
        self.engineScans = engineScans
        self.directory = directory
    }

    /// The real check: the pair's query at its scanned sizes, then the diagnosis of a failure.
    public static func probing(_ targets: [MonitorTarget], with prober: Prober, attempts: Int) -> Check {
        { i in
            let outcome = await targets[i].check(with: prober, attempts: attempts)
            guard !outcome.ok, !Task.isCancelled else { return (outcome, nil) }
            return (outcome, await targets[i].diagnose(with: prober, attempts: attempts))
        }
    }

    /// The real rate measurement (`RankRun`), within the probe's per-pair budget.
    public static func measuring(_ targets: [MonitorTarget], with probe: CapacityProbe) -> Measure {
        { i in
            let t = targets[i]
            let pair = RankTarget(target: t.target, zone: t.zone, queryCharacters: t.queryCharacters, answerBytes: t.answerBytes)
            let capacity = await RankRun(probe: probe).measure(pair, budgetSeconds: probe.settings.pairBudgetSeconds)
            return Task.isCancelled ? nil : capacity
        }
    }

    /// Runs the loop, writing history lines to `historyFD` (opened and closed by the caller).
    public func run(historyFD: Int32, check: @escaping Check, measure: Measure?) async -> State {
        var state = State(targets: targets)
        let settings = settings
        let targets = targets
        let engineFigures = engineScans.map { Self.figures($0, pairs: state.pairs) }
        let clock = ContinuousClock()
        let started = clock.now
        @Sendable func since() -> Double {
            let d = clock.now - started
            return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
        }
        var nextMemorySample = 1
        func sampleMemory() { state.memory.append(.init(checks: state.checks, ProcessMemory.now())) }
        var schedule = RateSchedule(pairs: targets.count, interval: settings.rateInterval ?? .infinity, parallel: settings.rateParallel)
        // Measurements end on their own tasks and hand their results over here.
        let measured = NIOLockedValueBox<[(Int, RateSample)]>([])
        let lines = MonitorHistory(fd: historyFD, targets: targets)
        func takeMeasured() {
            for (i, sample) in measured.withLockedValue({ m in defer { m.removeAll(keepingCapacity: true) }; return m }) {
                schedule.finish(i)
                state.pairs[i].record(rate: sample)
                lines.rate(at: since(), pair: i, sample: sample)
            }
        }
        await withTaskGroup(of: Void.self) { measurements in
            while !Task.isCancelled {
                if let limit = settings.duration, since() >= limit { break }
                if let limit = settings.checks, state.checks >= limit { break }
                let roundStart = clock.now
                takeMeasured()
                let checked = targets.indices.filter { !schedule.measuring.contains($0) }
                let results = await Self.checkAll(checked, parallel: settings.parallel, check: check)
                if Task.isCancelled, results.count < checked.count { break }
                let at = since()
                if !checked.isEmpty { state.rounds += 1 }
                for (i, outcome, diagnosis) in results.sorted(by: { $0.0 < $1.0 }) {
                    if let limit = settings.checks, state.checks >= limit { break }
                    let rtt = outcome.ok ? outcome.rttNanos.map { Double($0) / 1e6 } : nil
                    let drift = diagnosis.map { SizeDrift(at: at, queryCharacters: $0.queryCharacters, answerBytes: $0.answerBytes) }
                    state.pairs[i].record(ok: outcome.ok, at: at, rttMs: rtt, failure: outcome.failure?.rawValue, drift: drift)
                    state.checks += 1
                    lines.check(at: at, pair: i, outcome: outcome, rttMs: rtt, diagnosed: !outcome.ok && !Task.isCancelled, drift: drift)
                    if state.checks >= nextMemorySample {
                        sampleMemory()
                        nextMemorySample *= 10
                    }
                }
                if let measure {
                    for i in schedule.start(now: since(), up: state.pairs.map(\.up)) {
                        let at = since()
                        measurements.addTask {
                            guard let capacity = await measure(i) else { return }
                            measured.withLockedValue { $0.append((i, RateSample(at: at, capacity: capacity))) }
                        }
                    }
                }
                takeMeasured()
                // Each engine's file: the pairs that are up, by their latest measured goodput
                // when rates are known, else accepted first in the scan's order.
                let orders = engineFigures.map { Self.fileOrder($0, pairs: state.pairs) }
                if orders != state.lastOrders {
                    Self.writeExports(engineScans, figures: engineFigures, orders: orders, directory: directory)
                    if state.lastOrders != nil {
                        state.rewrites += 1
                        state.rewriteTimes.append(at)
                    }
                    state.lastOrders = orders
                }
                state.elapsed = since()
                // Nothing to check (every pair is being measured): wait for a measurement to end.
                let pause = checked.isEmpty ? Swift.max(settings.interval, 0.1) : settings.interval
                let wake = roundStart + .milliseconds(Int64(pause * 1000))
                if wake > clock.now {
                    if let limit = settings.duration, since() + pause > limit { break }
                    try? await Task.sleep(until: wake, clock: clock)
                }
            }
            measurements.cancelAll()
        }
        state.elapsed = since()
        sampleMemory()
        state.historyFailure = lines.failure
        return state
    }

    /// One round's checks, at most `parallel` at once, in the order they end.
    static func checkAll(_ checked: [Int], parallel: Int, check: @escaping Check) async
        -> [(Int, ProbeOutcome, (queryCharacters: Int?, answerBytes: Int?)?)] {
        await withTaskGroup(of: (Int, ProbeOutcome, (queryCharacters: Int?, answerBytes: Int?)?).self) { group in
            var out: [(Int, ProbeOutcome, (queryCharacters: Int?, answerBytes: Int?)?)] = []
            var next = checked.makeIterator()
            func launch(_ i: Int) { group.addTask { let r = await check(i); return (i, r.outcome, r.diagnosis) } }
            for _ in 0..<Swift.min(parallel, checked.count) { next.next().map(launch) }
            while let done = await group.next() {
                out.append(done)
                if !Task.isCancelled { next.next().map(launch) }
            }
            return out
        }
    }

    /// Each engine's figures per watched pair (same indices as the pairs), nil where the engine
    /// cannot use the pair.
    static func figures(_ scan: EngineScan, pairs: [PairStability]) -> [PairFigures?] {
        var byPair: [String: PairFigures] = [:]
        for f in scan.synced.usable { byPair[f.resolver + " " + f.domain] = f }
        return pairs.map { byPair[$0.resolver + " " + $0.domain] }
    }

    /// The pairs of an engine's resolver file, in order (`ResolverFileOrder`).
    static func fileOrder(_ figures: [PairFigures?], pairs: [PairStability]) -> [Int] {
        ResolverFileOrder.order(pairs) { figures[$0]?.download.bytesPerQuery }
    }

    /// Each engine's files for the pairs in `orders`, written beside the report: temporary file,
    /// then rename, so a reader never sees half a file.
    static func writeExports(_ scans: [EngineScan], figures: [[PairFigures?]], orders: [[Int]], directory: String) {
        for (e, scan) in scans.enumerated() {
            let model = EngineCatalog.model(for: scan.engine)
            let chosen = orders[e].compactMap { figures[e][$0] }
            let files = model.exports(SyncedFigures(engine: scan.engine, upload: scan.synced.upload, download: scan.synced.download,
                                                    usable: chosen, rejected: []))
            let dir = directory + "/exports/\(scan.engine.rawValue)"
            try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            for file in files {
                try? Data(file.text.utf8).write(to: URL(fileURLWithPath: dir + "/" + file.name), options: .atomic)
            }
        }
    }
}
