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
/// A range scan's background loss is not the scan's congestion either (`lossRule`): a sweep meets
/// resolvers that drop a share of what they get, rate-limit, or answer late, and their timeouts,
/// counted as the scan's, halved the window 22 to 33 times, down to its floor, for the rest of a
/// sweep (issue 27). Congestion the scan makes shows as loss above what the scan loses anyway, so
/// the scan keeps its background share of expected answers lost once it has slowed down (a slow
/// moving average over about `backgroundSpan` of those sent after the first decrease, leaving out
/// those a later decrease met: they were its congestion), and a
/// block's losses halve the window only when they are improbable at that share (`backgroundLevel`,
/// a binomial upper tail) as well as above a tenth. One overloaded server behind a thousand
/// addresses loses from a background near zero and halves the window at once; a sweep whose lossy
/// hosts lose a few percent all along does not, until its own sending adds loss on top. A lost
/// answer's resolver still has its loss measured, by its confirmation probes (`ScanPair.loss`).
/// A size probe's own timeout is not a
/// signal: silently dropping names or answers above a size is a size limit, common on real paths
/// (fragmented answers), and must not throttle the scan. Queries to a resolver that has never
/// answered do not take a place in the window either (most addresses of a range scan are silent
/// and would hold it for a whole timeout); `--concurrency` bounds those.
///
/// Every probe learns whether the scan saw congestion while it was in flight (`Ticket`): a size
/// probe that timed out then is retried (`ProbeOutcome.congested`) instead of counted as a limit.
///
/// Whether a resolver answers at all is judged the same way (`Stats.timeoutRule`): a reachability
/// or echo timeout is not evidence by itself, since the scan's own bursts lose queries together
/// (the first burst of a 1,000-address scan of one resolver is 1,000 queries to never-answered
/// addresses) and whether a lost one looked quiet when it went is chance. The pair is asked once
/// more when the scan is quiet (`acquire(quiet:)`: nothing waiting for the window and at most half
/// of it in flight, never-answered resolvers' queries included), and called unreachable only when
/// that quiet retry times out too, met by no decrease and lost alone. The stages after it do the
/// same (`MTUSearch.quietRetries`, `Scanner.confirm`): a size probe's timeout is no congestion
/// signal, so the window does not shrink for the sizes the scan loses in its own overload. Once,
/// in a full `make test`, 12 of 1,000 pairs through one unbound were rejected after their upload
/// had passed, with no download figure: only the download search could do that, and a lowest size
/// it lost there rejected the pair without a quiet retry.
public final class CongestionWindow: Sendable {
    /// The window's place for one query; hand it back with `complete`.
    public struct Ticket: Sendable {
        /// Whether the query took a place in the window (a resolver that answered before).
        let counted: Bool
        /// Send order: a query sent before the last decrease cannot cause another.
        let serial: UInt64
        /// Decreases so far when it was sent: more at completion means congestion while in flight.
        let decreasesAtSend: Int
        /// A retry that waited for a quiet scan (`acquire(quiet:)`).
        let quietRetry: Bool
        /// An uncounted query that adds to the load `isQuiet` judges.
        let loads: Bool
        /// The scan's expected answers lost when it was sent (`State.expectedLost`): more at
        /// completion means others were lost while it was in flight.
        let lostAtSend: UInt64
    }

    /// What the window did during a scan (`scan.json` `congestion`), in Results.
    public typealias Stats = CongestionWindowStats

    /// The marker for queries whose timeout is a congestion signal (`expectingAnswer`).
    @TaskLocal static var expected = false
    /// The marker for retries that wait for a quiet scan before they are sent (`quietly`).
    @TaskLocal static var quiet = false

    public static let timeoutRule = CongestionWindowStats.timeoutRule

    public static let lossRule = "A lost answer that should have come (an echo, control or confirmation probe to a resolver that "
        + "answered before) is a congestion signal; more than a tenth of about a window of them, from at least two resolvers, halves "
        + "the window when that many losses would come with probability below \(backgroundLevel) (binomial upper tail) at the "
        + "scan's background loss share: the share of such answers lost after the first halving while no further halving came, "
        + "averaged over about the last "
        + "\(backgroundSpan) of them, taken as at least \(shareFloor) and at most \(shareCeiling); a block that lost more than "
        + "\(heavyShare) of them halves it whatever the background."

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
        var lost = 0
        var lostFrom: Set<Endpoint> = []
    }

    /// A decrease needs losses from this many resolvers: one lossy path is that path's loss, which
    /// its own confirmation probes must measure, not the scan's congestion.
    static let distinctLosers = 2
    /// ... and more than this share of the block's expected answers lost ...
    static let lossShare = 0.1
    /// ... with at least this many expected answers judged.
    static let minimumBlock = 10
    /// ... when that many losses or more would come with probability below this level at the scan's
    /// background loss share (binomial upper tail): about one block in a thousand of a scan that
    /// makes no congestion halves the window by chance, instead of one in twenty with the tenth
    /// alone at a few percent of background loss (what held a sweep's window at its floor). (At
    /// 0.01 the /16 sweep + MTU scan at 3 % answering took 42 to 61 s in five quiet runs, at 0.001
    /// 35 to 42 s, and 31 to 40 s with `heavyShare`; one overloaded unbound behind 1,000 addresses
    /// still halves it 2 to 3 times.)
    static let backgroundLevel = 0.001
    /// The background share averages about this many expected answers: long against a block, so
    /// that a burst of the scan's own loss barely moves it.
    static let backgroundSpan = 400
    /// The background share is taken as at least this when it is lower ...
    static let shareFloor = 0.01
    /// ... and at most this: a scan that loses more than a fifth of the answers that should come
    /// slows down whatever the cause (loss that stays this high after halvings is not taken for a
    /// background the scan may ignore).
    static let shareCeiling = 0.2
    /// A block that lost more than this share halves the window whatever the background: in a block
    /// of 20 (a small window's), 0.001 at a background of a fifth asks for 11 losses, and a scan
    /// losing half of what should come must slow down.
    static let heavyShare = 0.4

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
        /// Expected answers lost so far (a silent address's own timeouts are none): a ticket's
        /// snapshot at send tells whether others were lost while it was in flight.
        var expectedLost: UInt64 = 0
        /// The scan's background loss share: a moving average of expected answers lost while no
        /// decrease came (`backgroundSpan`), and how many it has seen.
        var background = 0.0
        var backgroundCount = 0

        /// Counts one expected answer toward the background share: only once the window was halved
        /// (the loss that stays when the scan has slowed down is the loss it cannot remove), and
        /// unless a decrease met it.
        mutating func recordBackground(lost: Bool, ticket: Ticket) {
            guard ticket.decreasesAtSend > 0, ticket.decreasesAtSend == decreases else { return }
            backgroundCount += 1
            background += ((lost ? 1 : 0) - background) / Double(min(backgroundCount, CongestionWindow.backgroundSpan))
        }

        /// Whether a block's losses stand out from the background share (`lossRule`).
        func aboveBackground(_ block: Block) -> Bool {
            if Double(block.lost) > CongestionWindow.heavyShare * Double(block.done) { return true }
            let learned = backgroundCount >= CongestionWindow.minimumBlock ? min(background, CongestionWindow.shareCeiling) : 0
            let share = max(learned, CongestionWindow.shareFloor)
            return CongestionWindow.binomialUpperTail(block.lost, of: block.done, share: share) < CongestionWindow.backgroundLevel
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
    public init(ceiling: Int, initial: Int = 64, floor: Int = 8) {
        self.ceiling = max(1, ceiling)
        self.floor = max(1, min(floor, self.ceiling))
        let start = max(self.floor, min(initial, self.ceiling))
        self.state = Mutex(State(window: Double(start), ssthresh: Double(self.ceiling),
                                 stats: Stats(initialWindow: start, ceiling: self.ceiling, floor: self.floor, lossRule: Self.lossRule)))
    }

    public var stats: Stats {
        state.withLock { s in
            var stats = s.stats
            stats.finalWindow = Int(s.window)
            if s.backgroundCount > 0 { stats.backgroundShare = (s.background * 10_000).rounded() / 10_000 }
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
            guard s.alive.contains(resolver) else {
                if !quiet { s.uncounted += 1 }
                return .go(Ticket(counted: false, serial: s.serial, decreasesAtSend: s.decreases,
                                  quietRetry: quiet, loads: !quiet, lostAtSend: s.expectedLost))
            }
            if s.waiters.isEmpty, s.inFlight < Int(s.window) {
                s.inFlight += 1
                return .go(Ticket(counted: true, serial: s.serial, decreasesAtSend: s.decreases,
                                  quietRetry: quiet, loads: false, lostAtSend: s.expectedLost))
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
                return Ticket(counted: granted, serial: s.serial, decreasesAtSend: s.decreases,
                              quietRetry: quiet, loads: !granted, lostAtSend: s.expectedLost)
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

    /// What the scan saw while a query was in flight (`complete`).
    public struct Completion: Sendable {
        /// A decrease came since it was sent (or it caused one): the scan was congested.
        public let congested: Bool
        /// Other expected answers were lost while it was in flight: a timeout of its own then is no
        /// clean evidence that its resolver does not answer.
        public let othersLost: Bool
    }

    /// Hands the place back. `answered`: any response came; `expected`: the query was one that
    /// should have been answered (`expectingAnswer`). Returns whether the scan saw congestion while
    /// it was in flight (a decrease since it was sent, or the one it caused) and whether others
    /// were lost meanwhile.
    @discardableResult
    public func complete(_ ticket: Ticket, resolver: Endpoint, answered: Bool, expected: Bool) -> Completion {
        let completion: Completion = state.withLock { s in
            if ticket.counted { s.inFlight = max(0, s.inFlight - 1) }
            if ticket.loads { s.uncounted = max(0, s.uncounted - 1) }
            let othersLost = s.expectedLost &- ticket.lostAtSend > 0
            if ticket.quietRetry {
                s.stats.quietRetries = (s.stats.quietRetries ?? 0) + 1
                if answered { s.stats.quietRetriesAnswered = (s.stats.quietRetriesAnswered ?? 0) + 1 }
            }
            // The share of expected answers lost is judged over blocks of about a window of them.
            if expected, answered || s.alive.contains(resolver) {
                s.recordBackground(lost: !answered, ticket: ticket)
                s.block.done += 1
                if !answered {
                    s.expectedLost &+= 1
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
                      Double(s.block.lost) > Self.lossShare * Double(s.block.done), ticket.serial > s.lastDecreaseSerial,
                      s.aboveBackground(s.block) {
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
            return Completion(congested: s.decreases != ticket.decreasesAtSend, othersLost: othersLost)
        }
        wakeWaiters()
        return completion
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
