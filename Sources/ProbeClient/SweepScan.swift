import Base
import DNSWire
import Synchronization
public import Results

/// What a terminal shows while a sweep runs.
public struct SweepProgress: Sendable {
    /// Addresses probed (this run and the runs it resumes), of `planned`.
    public var swept: UInt64
    public var planned: UInt64
    /// Addresses that answered and go on to the MTU scan.
    public var answering: Int
    /// Pairs whose MTU scan ended, and of those, accepted.
    public var measured: Int
    public var accepted: Int
    /// Pairs waiting for or in their MTU scan.
    public var pending: Int
    public var elapsedSeconds: Double
    /// Probes per second this run so far.
    public var rate: Double
    /// The sweep's remaining probes at the current rate, or, once it is done, the MTU scans left at
    /// the pace they have been going.
    public var etaSeconds: Double? {
        if swept < planned { return rate > 0 ? Double(planned - swept) / rate : nil }
        guard pending > 0, measured > 0 else { return pending == 0 ? 0 : nil }
        return elapsedSeconds / Double(measured) * Double(pending)
    }
}

public struct SweepScanResult: Sendable {
    public var stats: SweepStats
    public var checkpoint: SweepCheckpoint
    public var state: SweepJournal.State
    /// Every pass walked to its end (and not interrupted).
    public var complete: Bool
    /// Every answer, the runs this one resumes included, in address order.
    public var answers: [SweepAnswer]
    /// Every MTU scan that ended, the resumed runs' included.
    public var pairs: [ScanPair]
    public var interrupted: Bool
    /// The previous run stopped without settling (a hard kill): answers to its last probes may be lost.
    public var resumedUnsettled: Bool
    public var resumed: Bool
    public var seconds: Double
}

/// A sweep and the staged MTU scan of what answers, together: each answering address goes to the
/// `Scanner` (for every domain) as soon as its answer arrives, while the sweep goes on; answers and
/// finished pairs are appended to the journal as they come.
public final class SweepScan: Sendable {
    public let sweeper: Sweeper
    public let scanner: Scanner
    public let journal: SweepJournal
    /// False: only sweep (find what answers), no MTU scan.
    public let measures: Bool
    private let control = Mutex<AsyncStream<Event>.Continuation?>(nil)
    private let stopped = Atomic<Bool>(false)

    enum Event: Sendable {
        case answer(SweepAnswer)
        case stop
        case done(SweepJournal.State, SweepStats, Bool)
    }

    public init(sweeper: Sweeper, scanner: Scanner, journal: SweepJournal, measures: Bool = true) {
        self.sweeper = sweeper
        self.scanner = scanner
        self.journal = journal
        self.measures = measures
    }

    /// Stops sending and cancels the MTU scans in progress; answers to what was sent are still
    /// waited for (the timeout) and journalled, so a resume starts where this run stopped.
    public func stop() {
        stopped.store(true, ordering: .relaxed)
        sweeper.stop()
        _ = control.withLock { $0?.yield(.stop) }
    }

    /// Runs the sweep from `state`'s checkpoint (a fresh state for a new sweep).
    public func run(state initial: SweepJournal.State, resumed: Bool,
                    progress: (@Sendable (SweepProgress) -> Void)? = nil) async -> SweepScanResult {
        let started = Sweeper.nowNanos()
        var state = initial
        let previousAnswers = resumed ? journal.readAnswers() : []
        let previousPairs = resumed ? journal.readPairs() : []
        let resumedUnsettled = resumed && !initial.checkpoint.settled
        state.checkpoint.settled = true
        journal.write(state)

        var answered = Set(previousAnswers.map(\.ip))
        var answers = Dictionary(previousAnswers.map { ($0.ip, $0) }, uniquingKeysWith: { a, _ in a })
        let domains = scanner.configuration.domains
        let donePairs = Set(previousPairs.map { "\($0.resolver) \($0.domain)" })
        var backlog: [(Endpoint, DNSName)] = []
        for answer in answers.sorted(by: { $0.key < $1.key }).map(\.value) where answer.answering && measures {
            let endpoint = Endpoint(address: answer.ip, port: sweeper.configuration.port)
            for d in domains where !donePairs.contains("\(endpoint) \(d)") { backlog.append((endpoint, d)) }
        }

        let counts = SweepCounters(SweepCounters.Values(
            answering: previousAnswers.filter(\.answering).count,
            measured: previousPairs.count, accepted: previousPairs.filter(\.accepted).count, pending: backlog.count))
        let planned = sweeper.configuration.planned
        let initialEmitted = initial.checkpoint.emitted
        let sweeper = self.sweeper
        let report: @Sendable () -> Void = {
            guard let progress else { return }
            let c = counts.withLock { $0 }
            let elapsed = Double(Sweeper.nowNanos() - started) / 1e9
            // What was really sent (the checkpoints run a batch ahead); once the sweep is done, its final rate.
            let sent = sweeper.snapshot
            let rate = sent.sendSeconds > 0 ? sent.packetsPerSecond ?? 0 : (elapsed > 0 ? Double(sent.sent) / elapsed : 0)
            progress(SweepProgress(swept: min(planned, initialEmitted + sent.sent), planned: planned, answering: c.answering,
                                   measured: c.measured, accepted: c.accepted, pending: c.pending, elapsedSeconds: elapsed,
                                   rate: rate))
        }

        let (stream, continuation) = AsyncStream<Event>.makeStream()
        control.withLock { $0 = continuation }
        if stopped.load(ordering: .relaxed) { continuation.yield(.stop) }
        let base = initial.checkpoint
        let journal = self.journal
        let stateForPasses = state
        // Every address that answered so far (any answer, REFUSED included: it is there), for the
        // later passes' skip lists; filled on the receiver thread as answers come.
        let answeredShared = AddressSet(previousAnswers.map(\.ip))
        let sweepTask = Task.detached {
            var st = stateForPasses
            let passes = max(1, st.passes ?? 1)
            var pass = max(1, st.pass ?? 1)
            var checkpoint = base
            var total: SweepStats?
            var complete = false
            while true {
                let skip: (v4: Set<UInt32>, v6: Set<UInt128>) = pass > 1 ? answeredShared.split : ([], [])
                var plan = SweepPassPlan(pass: pass, skip: skip.v4, walkLimit: pass > 1 ? st.firstPassEnd : nil,
                                         emitLimit: pass > 1 ? nil : sweeper.configuration.sample)
                plan.skip6 = skip.v6
                let current = st
                let thisPass = pass
                let (reached, stats, exhausted) = await sweeper.run(from: checkpoint, plan: plan, onAnswer: { found in
                    var answer = found
                    // The address is read back from its text only when a later pass or the
                    // neighbours need it: this runs on the receiver thread, beside the sender.
                    if passes > 1 { answeredShared.insert(answer.ip) }
                    answer.pass = thisPass
                    if sweeper.configuration.neighbourPrefix != nil, sweeper.sentAsNeighbour(answer.value) { answer.viaNeighbour = true }
                    continuation.yield(.answer(answer))
                }, onCheckpoint: { c in
                    var s = current
                    s.checkpoint = c
                    journal.write(s)
                })
                if total == nil { total = stats } else { total?.add(stats) }
                st.checkpoint = reached
                guard exhausted else { break }
                if pass == 1 { st.firstPassEnd = reached.position }
                if (st.passSent?.count ?? 0) < pass { st.passSent = (st.passSent ?? []) + [reached.emitted] }
                if pass >= passes {
                    complete = true
                    break
                }
                pass += 1
                st.pass = pass
                st.checkpoint = SweepCheckpoint()
                journal.write(st)
                checkpoint = st.checkpoint
            }
            continuation.yield(.done(st, total ?? SweepStats(), complete))
            continuation.finish()
        }

        let gate = ScanGate(limit: max(1, scanner.configuration.concurrency))
        let scanner = self.scanner
        let finished = PairBox()
        var final: (SweepJournal.State, SweepStats, Bool)?
        var stopping = stopped.load(ordering: .relaxed)
        // A discarding group: a finished scan's task is freed at once (a plain group keeps every
        // finished child, about 20 KB each, until its result is read, which the event loop below
        // would only do at the end), so memory follows the scans in flight, not the scans done.
        await withDiscardingTaskGroup { group in
            func enqueue(_ endpoint: Endpoint, _ domain: DNSName) {
                group.addTask {
                    await gate.acquire()
                    guard !Task.isCancelled else {
                        await gate.release()
                        return
                    }
                    let scanned = await scanner.scanPair(endpoint, domain)
                    await gate.release()
                    guard let pair = scanned else { return }
                    journal.append(pair)
                    counts.withLock {
                        $0.measured += 1
                        $0.pending -= 1
                        if pair.accepted { $0.accepted += 1 }
                    }
                    finished.append(pair)
                    report()
                }
            }
            if !stopping { for (e, d) in backlog { enqueue(e, d) } }
            var lastReport: UInt64 = 0
            for await event in stream {
                switch event {
                case .answer(var answer):
                    let value = answer.ip
                    guard !answered.contains(value) else { continue }
                    answered.insert(value)
                    answer.detail = answer.detail.map { String($0.prefix(200)) }
                    answers[value] = answer
                    journal.append(answer)
                    if answer.answering {
                        let measures = self.measures
                        counts.withLock {
                            $0.answering += 1
                            if measures { $0.pending += domains.count }
                        }
                        if !stopping, measures {
                            let endpoint = Endpoint(address: answer.ip, port: sweeper.configuration.port)
                            for d in domains { enqueue(endpoint, d) }
                        }
                    }
                case .stop:
                    stopping = true
                    group.cancelAll()
                case .done(let reached, let stats, let complete):
                    final = (reached, stats, complete)
                }
                let now = Sweeper.nowNanos()
                if now - lastReport > 100_000_000 {
                    lastReport = now
                    report()
                }
            }
        }
        await sweepTask.value
        control.withLock { $0 = nil }
        report()
        let (reachedState, stats, complete) = final ?? (state, SweepStats(), false)
        state = reachedState
        let reached = state.checkpoint
        state.checkpoint.settled = true
        journal.write(state)
        report()
        var pairs = previousPairs + finished.pairs
        pairs.sort { ($0.resolver, $0.domain) < ($1.resolver, $1.domain) }
        return SweepScanResult(stats: stats, checkpoint: reached, state: state, complete: complete,
                               answers: answers.sorted { $0.key < $1.key }.map(\.value), pairs: pairs,
                               interrupted: stopped.load(ordering: .relaxed), resumedUnsettled: resumedUnsettled,
                               resumed: resumed, seconds: Double(Sweeper.nowNanos() - started) / 1e9)
    }
}

extension ScanResult {
    /// The result of MTU scans run outside `Scanner.run` (a sweep's).
    public static func measured(pairs: [ScanPair], notTested: Int, queries: Int, interrupted: Bool) -> ScanResult {
        ScanResult(pairs: pairs, notTested: notTested, queries: queries, interrupted: interrupted)
    }
}

/// Addresses shared between the receiver threads and the pass loop.
final class AddressSet: Sendable {
    private let addresses: Mutex<Set<IPAddress>>
    init(_ initial: [IPAddress]) { addresses = Mutex(Set(initial)) }
    func insert(_ address: IPAddress) { _ = addresses.withLock { $0.insert(address) } }
    /// The IPv4 addresses and the IPv6 ones, as the sender's skip lists take them.
    var split: (v4: Set<UInt32>, v6: Set<UInt128>) {
        var v4: Set<UInt32> = []
        var v6: Set<UInt128> = []
        for a in addresses.withLock({ $0 }) {
            switch a {
            case .v4(let value): v4.insert(value)
            case .v6(let hi, let lo): v6.insert(UInt128(hi) << 64 | UInt128(lo))
            }
        }
        return (v4, v6)
    }
}

/// The pairs the scans of one run finished.
final class PairBox: Sendable {
    private let list = Mutex<[ScanPair]>([])
    func append(_ pair: ScanPair) { list.withLock { $0.append(pair) } }
    var pairs: [ScanPair] { list.withLock { $0 } }
}

/// The progress counters, shared by the sweep's threads and the scan tasks.
final class SweepCounters: Sendable {
    struct Values {
        var answering: Int
        var measured: Int
        var accepted: Int
        var pending: Int
    }

    private let values: Mutex<Values>
    init(_ initial: Values) { values = Mutex(initial) }
    func withLock<T>(_ body: (inout Values) -> T) -> T { values.withLock { body(&$0) } }
}

/// At most `limit` MTU scans at once; the rest wait in arrival order.
actor ScanGate {
    private let limit: Int
    private var running = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(limit: Int) { self.limit = limit }

    func acquire() async {
        if running < limit {
            running += 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func release() {
        if waiting.isEmpty {
            running -= 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}
