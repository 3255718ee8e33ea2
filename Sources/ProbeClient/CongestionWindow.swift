public import Base
public import Results
import DequeModule
import Foundation
import Synchronization

/// Scan-wide congestion control: one window bounds the queries in flight to every resolver at once,
/// so that a bottleneck the scan itself makes (its own socket buffers, a shared first hop, one
/// recursive resolver behind many addresses, a NAT table) slows the scan instead of failing pairs.
///
/// The idea is TCP's (RFC 5681 3.1, RFC 2914 3.1 for why any sender that shares a path must back off):
/// additive increase, multiplicative decrease of a window of queries in flight. Slow start grows it
/// by one query per answer below `ssthresh` (doubling per round trip), congestion avoidance by
/// 1/window per answer above it (one query per round trip). A congestion signal halves it, at most
/// once per window of queries (only a query sent after the last decrease can cause the next one, as
/// NewReno reduces once per window, RFC 6582 3.2).
///
/// The signal is lost answers to queries that should have been answered: ones to a resolver that
/// has answered in this scan, of a kind that passed before (an echo probe, a control probe, a
/// confirmation probe, a size re-checked below a timed-out one), when more than a tenth of a
/// window's worth of them are lost and from at least two resolvers (one lossy path is its own loss,
/// measured by its confirmation, not the scan's congestion).
///
/// Loss that belongs to one resolver is not the scan's congestion either (`lossRule`): a range scan
/// meets resolvers that drop a share of what they get, rate-limit, or answer late, and their
/// timeouts, counted as the scan's, held the window at its floor for the rest of a sweep (issue 27).
/// The scan's own congestion (its socket buffers, a shared first hop, one server behind many
/// addresses) loses answers from every resolver alike; a resolver that loses far more than the
/// scan does at the same time is losing its own. So each resolver's expected answers and losses
/// are counted, and so is the scan's recent loss share (a moving average over about the last
/// `recentSpan` expected answers); a resolver whose losses are at least
/// `ownLossMinimum` and improbable at the scan's recent share (`ownLossLevel`, a binomial upper
/// tail) is judged individually lossy for the rest of the scan: its answers and losses leave the
/// blocks and the scan's share, so they neither cause nor dilute a decrease. Its own loss is still
/// measured, by its confirmation probes (`ScanPair.loss`). A size probe's own timeout is not a
/// signal: silently dropping names or answers above a size is a size limit, common on real paths
/// (fragmented answers), and must not throttle the scan. Queries to a resolver that has never
/// answered do not take a place in the window either (most addresses of a range scan are silent
/// and would hold it for a whole timeout); `--concurrency` bounds those.
///
/// Every probe learns whether the scan saw congestion while it was in flight (`Ticket`): a size
/// probe that timed out then is retried (`ProbeOutcome.congested`) instead of counted as a limit.
///
/// Whether a resolver answers at all is judged the same way (`Stats.timeoutRule`): a probe also
/// learns whether the scan was busy when it was sent (others waiting for the window, or more
/// queries in flight than half the window, never-answered resolvers' included: the first burst of
/// a 1,000-address scan of one resolver is 1,000 such queries). A reachability or echo timeout sent
/// while busy, or met by a decrease, is not evidence: the pair is asked once more when the scan is
/// quiet (`acquire(quiet:)`), and called unreachable only when that quiet retry times out too.
public final class CongestionWindow: Sendable {
    /// The window's place for one query; hand it back with `complete`.
    public struct Ticket: Sendable {
        /// Whether the query took a place in the window (a resolver that answered before).
        let counted: Bool
        /// Send order: a query sent before the last decrease cannot cause another.
        let serial: UInt64
        /// Decreases so far when it was sent: more at completion means congestion while in flight.
        let decreasesAtSend: Int
        /// The scan was busy when it was sent (`isQuiet` did not hold): its timeout may be the scan's own load.
        public let busy: Bool
        /// A retry that waited for a quiet scan (`acquire(quiet:)`).
        let quietRetry: Bool
        /// An uncounted query that adds to the load `isQuiet` judges.
        let loads: Bool
    }

    /// What the window did during a scan (`scan.json` `congestion`), in Results.
    public typealias Stats = CongestionWindowStats

    /// The marker for queries whose timeout is a congestion signal (`expectingAnswer`).
    @TaskLocal static var expected = false
    /// The marker for retries that wait for a quiet scan before they are sent (`quietly`).
    @TaskLocal static var quiet = false

    public static let timeoutRule = CongestionWindowStats.timeoutRule

    public static let lossRule = defaultOwnLossLevel > 0 ? lossRuleWithOwnLoss(level: defaultOwnLossLevel) : lossRuleCommon

    static let lossRuleCommon = "A lost answer that should have come (an echo, control or confirmation probe to a resolver that "
        + "answered before) is a congestion signal; more than a tenth of about a window of them, from at least two resolvers, halves "
        + "the window."

    static func lossRuleWithOwnLoss(level: Double) -> String { lossRuleCommon
        + " Losses of one resolver's queries that were in flight together count as one loss event (RFC 5348 5.2). "
        + "A resolver with at least \(ownLossMinimum) loss events, so many that a resolver losing at the scan's recent share "
        + "(over about its last \(recentSpan) such answers, at least \(shareFloor)) would lose as many with probability below "
        + "\(level) (binomial upper tail), is individually lossy (it drops, "
        + "rate-limits or is slow on its own), unless the window was halved while the query was in flight: its answers and "
        + "losses are left out of that count for the rest of the scan, and its loss is measured by its confirmation probes." }

    /// Runs `body` with its queries sent only when the scan is quiet (`acquire(quiet:)`).
    public static func quietly<T>(_ body: () async -> T) async -> T {
        await $quiet.withValue(true) { await body() }
    }

    /// Runs `body` with its queries marked as ones that should be answered (their timeouts signal
    /// congestion, not a size limit).
    public static func expectingAnswer<T>(_ body: () async -> T) async -> T {
        await $expected.withValue(true) { await body() }
    }

    private struct Waiter {
        var id: UInt64
        /// Resumed with true when given a place, false when cancelled (it goes on uncounted).
        var continuation: CheckedContinuation<Bool, Never>
    }

    /// Expected answers completed since the last decrease or reset, and how many of them were lost
    /// (from which resolvers, up to `distinctLosers`).
    private struct Block {
        var done = 0
        /// Loss events (`recordExpected`): losses of queries in flight together count once.
        var lost = 0
        /// The scan's serial when the last counted loss was seen: a loss counts again only for a
        /// query sent after it.
        var lossEventSerial: UInt64 = 0
        var lostFrom: Set<Endpoint> = []
    }

    /// A decrease needs losses from this many resolvers: one lossy path is that path's loss, which
    /// its own confirmation probes must measure, not the scan's congestion.
    static let distinctLosers = 2
    /// ... and more than this share of the block's expected answers lost ...
    static let lossShare = 0.1
    /// ... with at least this many expected answers judged.
    static let minimumBlock = 10
    /// A resolver is individually lossy with at least this many losses of its own ...
    static let ownLossMinimum = 2
    /// ... when that many losses or more in its expected answers would come with probability below
    /// this level if it lost at the scan's recent share (binomial upper tail): one resolver among a
    /// thousand that loses with the others (one overloaded server behind many addresses) is then
    /// rarely taken for lossy by chance, while a resolver that loses most of what it gets is
    /// judged after a few losses. (A plain ratio, three times the scan's share after two losses,
    /// took 176 of 1,000 addresses of one overloaded unbound for lossy ones, and the window then
    /// missed enough of the scan's own loss for 8 pairs to lose their download search.)
    ///
    /// Off (0: no resolver is ever judged lossy on its own) until it holds under load: with it on at
    /// 0.001 the /16 sweep + MTU scan at 3 % answering took 59.9 s instead of about 66, but
    /// `ScanOverloadLabTests.concurrency1000GivesTheMTUsOf256` (1,000 addresses of one overloaded
    /// unbound) lost 3 to 31 pairs when it ran in the full `make test`, while it passed alone. The
    /// right MTU under overload (issue 27 item 2) comes first; the counting stays so that the rule
    /// can be measured again (`ownLossResolvers` stays 0 while it is off).
    public static let defaultOwnLossLevel = 0.0
    /// The scan's share is taken as at least this when it is lower (a quiet scan with no recent
    /// loss would otherwise make any second loss improbable).
    static let shareFloor = 0.01

    /// P(X >= k) for X ~ Binomial(n, p), summed term by term (n is a resolver's expected answers:
    /// tens, at most thousands).
    public static func binomialUpperTail(_ k: Int, of n: Int, share p: Double) -> Double {
        guard k > 0 else { return 1 }
        guard k <= n, p > 0 else { return 0 }
        guard p < 1 else { return 1 }
        // log of the k-th term: log C(n, k) + k log p + (n - k) log(1 - p).
        var logTerm = Double(k) * Foundation.log(p) + Double(n - k) * Foundation.log1p(-p)
        for i in 0..<k { logTerm += Foundation.log(Double(n - i) / Double(i + 1)) }
        var term = Foundation.exp(logTerm)
        var sum = term
        var i = k
        while i < n {
            term *= Double(n - i) / Double(i + 1) * p / (1 - p)
            sum += term
            i += 1
            if term < sum * 1e-12 { break }
        }
        return min(1, sum)
    }
    /// The scan's recent loss share averages about this many expected answers: short, so that it
    /// follows the onset of the scan's own congestion before a resolver's second loss comes (with
    /// the span of a window, 64 or more, it lagged, and resolvers that lost with the others were
    /// judged lossy on their own).
    static let recentSpan = minimumBlock * 2

    /// One resolver's expected answers and how many of them were lost (`lossRule`).
    private struct Record {
        var done = 0
        /// Loss events (`recordExpected`): losses of queries in flight together count once.
        var lost = 0
        /// The scan's serial when the last counted loss was seen: a loss counts again only for a
        /// query sent after it.
        var lossEventSerial: UInt64 = 0
        /// Judged individually lossy: left out of the blocks and the scan's share from then on.
        var own = false
    }

    private struct State {
        var block = Block()
        var window: Double
        var ssthresh: Double
        var inFlight = 0
        var serial: UInt64 = 0
        var lastDecreaseSerial: UInt64 = 0
        var decreases = 0
        var alive: Set<Endpoint> = []
        var waiters: Deque<Waiter> = []
        var nextWaiter: UInt64 = 0
        var stats: Stats
        /// Uncounted queries in flight (to resolvers that never answered), quiet retries left out.
        var uncounted = 0
        var quietWaiters: Deque<(id: UInt64, continuation: CheckedContinuation<Void, Never>)> = []
        /// Every answering resolver's expected answers (`lossRule`).
        var records: [Endpoint: Record] = [:]
        /// The scan's recent share of expected answers lost, a moving average over about the last
        /// `recentSpan` of them (resolvers judged individually lossy left out), and how many it has seen.
        var recentShare = 0.0
        var recentCount = 0
        /// `CongestionWindow.defaultOwnLossLevel` unless the window was made with another.
        var ownLossLevel = 0.0

        /// Counts one expected answer of `resolver`; false when its loss is its own (`lossRule`), so
        /// the answer goes to no block.
        ///
        /// `ticket`: the query's, for two guards against taking the scan's own loss for the
        /// resolver's. Losses of queries that were all in flight together are one loss event (RFC
        /// 5348 5.2: losses within one round trip count once): only a query sent after the
        /// resolver's last counted loss was seen adds another, so a burst of the scan's congestion
        /// (an overflowing resolver queue drops every query it holds) is one loss, not several. And a
        /// loss met by a decrease of the window (the scan was congested while it was in flight) never
        /// makes a resolver lossy on its own.
        mutating func recordExpected(_ resolver: Endpoint, lost: Bool, ticket: Ticket) -> Bool {
            // The rule off (the default): every expected answer counts, and nothing per resolver is kept.
            guard ownLossLevel > 0 else { return true }
            var record = records[resolver] ?? Record()
            defer { records[resolver] = record }
            record.done += 1
            var newEvent = false
            if lost, ticket.serial > record.lossEventSerial {
                newEvent = true
                record.lost += 1
                record.lossEventSerial = serial
            }
            if record.own {
                if lost { stats.ownLosses = (stats.ownLosses ?? 0) + 1 }
                return false
            }
            if lost, newEvent, ticket.decreasesAtSend == decreases,
               record.lost >= CongestionWindow.ownLossMinimum, recentCount >= CongestionWindow.minimumBlock,
               CongestionWindow.binomialUpperTail(record.lost, of: record.done,
                                                  share: max(recentShare, CongestionWindow.shareFloor)) < ownLossLevel {
                // Individually lossy: this loss and every later answer are its own.
                record.own = true
                stats.ownLossResolvers = (stats.ownLossResolvers ?? 0) + 1
                stats.ownLosses = (stats.ownLosses ?? 0) + 1
                return false
            }
            // The plain average of the first `recentSpan` answers, then an exponential one.
            recentCount += 1
            recentShare += ((lost ? 1 : 0) - recentShare) / Double(min(recentCount, CongestionWindow.recentSpan))
            return true
        }

        /// Quiet: nothing waits for the window and at most half a window of queries is in flight.
        /// Quiet retries themselves do not count, so retries to dead addresses never hold each other up.
        var isQuiet: Bool {
            waiters.isEmpty && inFlight + uncounted <= max(1, Int(window) / 2)
        }
    }

    private let state: Mutex<State>
    public let ceiling: Int
    public let floor: Int

    /// `ceiling`: the most queries in flight the user allows (`--concurrency`); the window starts at
    /// `initial` (at most the ceiling) and grows by slow start up to it.
    /// `ownLossLevel`: the own-loss rule's level (`defaultOwnLossLevel`; 0 turns the rule off).
    public init(ceiling: Int, initial: Int = 64, floor: Int = 8, ownLossLevel: Double = CongestionWindow.defaultOwnLossLevel) {
        self.ceiling = max(1, ceiling)
        self.floor = max(1, min(floor, self.ceiling))
        let start = max(self.floor, min(initial, self.ceiling))
        let rule = ownLossLevel > 0 ? Self.lossRuleWithOwnLoss(level: ownLossLevel) : Self.lossRuleCommon
        var state = State(window: Double(start), ssthresh: Double(self.ceiling),
                          stats: Stats(initialWindow: start, ceiling: self.ceiling, floor: self.floor, lossRule: rule))
        state.ownLossLevel = ownLossLevel
        self.state = Mutex(state)
    }

    public var stats: Stats {
        state.withLock { s in
            var stats = s.stats
            stats.finalWindow = Int(s.window)
            return stats
        }
    }

    /// The current window, in queries.
    public var window: Int { state.withLock { Int($0.window) } }

    /// Waits for a place in the window (none for a resolver that has not answered yet); with `quiet`,
    /// first waits until the scan is quiet (`State.isQuiet`).
    public func acquire(_ resolver: Endpoint, quiet: Bool = false) async -> Ticket {
        if quiet { await waitForQuiet() }
        enum Decision { case go(Ticket), wait(UInt64) }
        let decision: Decision = state.withLock { s in
            s.serial &+= 1
            let busy = !quiet && !s.isQuiet
            guard s.alive.contains(resolver) else {
                if !quiet { s.uncounted += 1 }
                return .go(Ticket(counted: false, serial: s.serial, decreasesAtSend: s.decreases, busy: busy,
                                  quietRetry: quiet, loads: !quiet))
            }
            if s.waiters.isEmpty, s.inFlight < Int(s.window) {
                s.inFlight += 1
                return .go(Ticket(counted: true, serial: s.serial, decreasesAtSend: s.decreases, busy: busy,
                                  quietRetry: quiet, loads: false))
            }
            s.nextWaiter &+= 1
            s.stats.waited += 1
            return .wait(s.nextWaiter)
        }
        switch decision {
        case .go(let ticket):
            return ticket
        case .wait(let id):
            let granted = await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                    let cancelled: Bool = state.withLock { s in
                        if Task.isCancelled { return true }
                        s.waiters.append(Waiter(id: id, continuation: continuation))
                        return false
                    }
                    if cancelled { continuation.resume(returning: false) }
                    // A place may have freed between the decision and the enqueue.
                    wakeWaiters()
                }
            } onCancel: {
                // A cancelled scan must not leave a probe waiting: it goes on uncounted.
                let waiter: Waiter? = state.withLock { s in
                    guard let index = s.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                    return s.waiters.remove(at: index)
                }
                waiter?.continuation.resume(returning: false)
            }
            return state.withLock { s in
                s.serial &+= 1
                if !granted { s.uncounted += 1 }
                // It waited for the window: the scan was busy.
                return Ticket(counted: granted, serial: s.serial, decreasesAtSend: s.decreases, busy: true,
                              quietRetry: quiet, loads: !granted)
            }
        }
    }

    /// Returns when the scan is quiet (at once when it is, or when cancelled).
    private func waitForQuiet() async {
        let id: UInt64 = state.withLock { s in
            s.nextWaiter &+= 1
            return s.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now: Bool = state.withLock { s in
                    if Task.isCancelled || s.isQuiet { return true }
                    s.quietWaiters.append((id, continuation))
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
                guard let index = s.quietWaiters.firstIndex(where: { $0.id == id }) else { return nil }
                return s.quietWaiters.remove(at: index).continuation
            }
            waiter?.resume()
        }
    }

    /// Hands the place back. `answered`: any response came; `expected`: the query was one that
    /// should have been answered (`expectingAnswer`). Returns whether the scan saw congestion while
    /// it was in flight (a decrease since it was sent, or the one it caused).
    @discardableResult
    public func complete(_ ticket: Ticket, resolver: Endpoint, answered: Bool, expected: Bool) -> Bool {
        let congested: Bool = state.withLock { s in
            if ticket.counted { s.inFlight = max(0, s.inFlight - 1) }
            if ticket.loads { s.uncounted = max(0, s.uncounted - 1) }
            if ticket.quietRetry {
                s.stats.quietRetries = (s.stats.quietRetries ?? 0) + 1
                if answered { s.stats.quietRetriesAnswered = (s.stats.quietRetriesAnswered ?? 0) + 1 }
            }
            // The share of expected answers lost is judged over blocks of about a window of them.
            if expected, answered || s.alive.contains(resolver), s.recordExpected(resolver, lost: !answered, ticket: ticket) {
                s.block.done += 1
                if !answered {
                    s.block.lost += 1
                    if s.block.lostFrom.count < Self.distinctLosers { s.block.lostFrom.insert(resolver) }
                    s.stats.signals += 1
                }
            }
            if answered {
                s.alive.insert(resolver)
                // RFC 5681 3.1: slow start adds one per acknowledgement, congestion avoidance 1/cwnd;
                // only for queries the window carried, and only while it is used (RFC 7661 4.3: a
                // window that is not used is not validated by its answers).
                if ticket.counted, s.inFlight + 1 >= Int(s.window) / 2 {
                    if s.window < s.ssthresh { s.window += 1 } else { s.window += 1 / s.window }
                    s.window = min(s.window, Double(ceiling))
                    s.stats.largestWindow = max(s.stats.largestWindow, Int(s.window))
                }
            } else if s.block.lostFrom.count >= Self.distinctLosers, s.block.done >= Self.minimumBlock,
                      Double(s.block.lost) > Self.lossShare * Double(s.block.done), ticket.serial > s.lastDecreaseSerial {
                // Multiplicative decrease: half the window (RFC 5681 3.1, eq. 4, with the window in
                // queries), not below the floor.
                s.window = max(Double(floor), s.window / 2)
                s.ssthresh = s.window
                s.lastDecreaseSerial = s.serial
                s.decreases += 1
                s.stats.decreases += 1
                s.stats.smallestWindow = min(s.stats.smallestWindow, Int(s.window))
                s.block = Block()
            }
            if s.block.done >= max(Self.minimumBlock * 2, Int(s.window)) { s.block = Block() }
            return s.decreases != ticket.decreasesAtSend
        }
        wakeWaiters()
        return congested
    }

    /// Gives freed places to waiting queries, oldest first; when the scan is then quiet, lets every
    /// quiet retry go.
    private func wakeWaiters() {
        let (ready, quiet): ([Waiter], [CheckedContinuation<Void, Never>]) = state.withLock { s in
            var woken: [Waiter] = []
            while s.inFlight < Int(s.window), let next = s.waiters.popFirst() {
                s.inFlight += 1
                woken.append(next)
            }
            guard s.isQuiet, !s.quietWaiters.isEmpty else { return (woken, []) }
            let quiet = s.quietWaiters.map(\.continuation)
            s.quietWaiters.removeAll()
            return (woken, quiet)
        }
        for waiter in ready { waiter.continuation.resume(returning: true) }
        for waiter in quiet { waiter.resume() }
    }
}
