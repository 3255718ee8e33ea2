import Base
import ProbeClient
import Synchronization
import Testing

@Suite struct CongestionWindowTests {
    let a = Endpoint(address: .v4(0xC000_0201), port: 53)  // 192.0.2.1
    let b = Endpoint(address: .v4(0xC000_0202), port: 53)

    /// The first query to a resolver takes no place; once it answered, its queries do.
    @Test func silentResolversTakeNoPlace() async {
        let window = CongestionWindow(ceiling: 4, initial: 2, floor: 1)
        var tickets: [CongestionWindow.Ticket] = []
        for _ in 0..<10 { tickets.append(await window.acquire(a)) }
        for t in tickets { window.complete(t, resolver: a, answered: false, expected: true) }
        #expect(window.stats.decreases == 0 && window.stats.signals == 0 && window.stats.waited == 0)
    }

    /// One round trip: the whole window sent, then every query answered.
    func round(_ window: CongestionWindow, _ resolver: Endpoint) async {
        var tickets: [CongestionWindow.Ticket] = []
        for _ in 0..<window.window { tickets.append(await window.acquire(resolver)) }
        for t in tickets { window.complete(t, resolver: resolver, answered: true, expected: false) }
    }

    /// Slow start grows a used window by one per answer up to the ceiling (an unused one does not
    /// grow); a lost answer that should have come halves it, once per window of queries; above
    /// ssthresh it grows by about one query per round trip.
    @Test func additiveIncreaseMultiplicativeDecrease() async {
        let window = CongestionWindow(ceiling: 64, initial: 4, floor: 2)
        // The first answer makes the resolver known; it took no place, so it does not grow the window.
        window.complete(await window.acquire(a), resolver: a, answered: true, expected: false)
        #expect(window.window == 4)
        // One query at a time does not use the window: no growth.
        for _ in 0..<10 { window.complete(await window.acquire(a), resolver: a, answered: true, expected: false) }
        #expect(window.window == 4)
        await round(window, a)
        #expect(window.window > 4)
        for _ in 0..<20 { await round(window, a) }
        #expect(window.window == 64 && window.stats.largestWindow == 64)
        // Expected answers lost from one resolver only: that path's loss, no signal to the scan.
        await expectedAnswers(window, 10)
        for _ in 0..<5 { window.complete(await window.acquire(a), resolver: a, answered: false, expected: true) }
        #expect(window.window == 64 && window.stats.decreases == 0 && window.stats.signals == 5)
        // From two resolvers, more than a tenth of a block: halved, once for the queries sent before.
        window.complete(await window.acquire(b), resolver: b, answered: true, expected: false)
        await expectedAnswers(window, 10)
        let first = await window.acquire(a)
        let second = await window.acquire(b)
        let third = await window.acquire(b)
        #expect(!window.complete(first, resolver: a, answered: false, expected: true).congested)
        #expect(window.complete(second, resolver: b, answered: false, expected: true).congested)
        #expect(window.window == 32 && window.stats.decreases == 1)
        // Sent before the decrease: congested, but no second halving.
        #expect(window.complete(third, resolver: b, answered: false, expected: true).congested)
        #expect(window.window == 32 && window.stats.decreases == 1)
        // Congestion avoidance: about one query more per round trip.
        await round(window, a)
        await round(window, a)
        #expect((33...34).contains(window.window), "\(window.window)")
        // A size probe's own timeout (not expected) is no signal.
        #expect(!window.complete(await window.acquire(a), resolver: a, answered: false, expected: false).congested)
        #expect(window.stats.decreases == 1)
        // The scan's own congestion: two more resolvers losing alike, half of what they get (above
        // the background share's ceiling, `shareCeiling`), down to the floor.
        let c = Endpoint(address: .v4(0xC000_0203), port: 53), d = Endpoint(address: .v4(0xC000_0204), port: 53)
        for _ in 0..<60 {
            await expectedAnswers(window, 1, from: c)
            await expectedAnswers(window, 1, from: d)
            window.complete(await window.acquire(c), resolver: c, answered: false, expected: true)
            window.complete(await window.acquire(d), resolver: d, answered: false, expected: true)
        }
        #expect(window.window == 2 && window.stats.smallestWindow == 2, "\(window.stats)")
    }

    /// The own-loss rule's binomial upper tail against values computed exactly (Python's math.comb).
    @Test func binomialUpperTailIsExact() {
        let cases: [(k: Int, n: Int, p: Double, tail: Double)] = [
            (2, 4, 0.07, 0.02672803), (3, 5, 0.1, 0.00856), (4, 12, 0.3, 0.5074842265649997), (10, 200, 0.01, 4.014180884713404e-05),
        ]
        for c in cases {
            let tail = CongestionWindow.binomialUpperTail(c.k, of: c.n, share: c.p)
            #expect(abs(tail - c.tail) <= c.tail * 1e-9, "P(X >= \(c.k) | \(c.n), \(c.p)) = \(tail), not \(c.tail)")
        }
        #expect(CongestionWindow.binomialUpperTail(0, of: 5, share: 0.2) == 1)
        #expect(CongestionWindow.binomialUpperTail(6, of: 5, share: 0.2) == 0)
        #expect(CongestionWindow.binomialUpperTail(2, of: 5, share: 0) == 0)
        #expect(CongestionWindow.binomialUpperTail(2, of: 5, share: 1) == 1)
    }

    /// `n` expected queries answered one at a time (they fill the loss block, not the window).
    func expectedAnswers(_ window: CongestionWindow, _ n: Int, from resolver: Endpoint? = nil) async {
        let resolver = resolver ?? a
        for _ in 0..<n { window.complete(await window.acquire(resolver), resolver: resolver, answered: true, expected: true) }
    }

    /// Issue 27, item 3: a sweep's background loss (its lossy and rate-limited hosts lose an eighth
    /// of the expected answers all along) halves the window once, not at every block; loss the scan
    /// adds on top of it still halves it (`CongestionWindow.lossRule`). Without the background rule
    /// every block of 64 answers with its 8 losses from two resolvers halves it, down to the floor.
    @Test func backgroundLossHalvesTheWindowOnce() async {
        let window = CongestionWindow(ceiling: 64, initial: 64, floor: 8)
        let c = Endpoint(address: .v4(0xC000_0203), port: 53), d = Endpoint(address: .v4(0xC000_0204), port: 53)
        for resolver in [a, b, c, d] { await expectedAnswers(window, 1, from: resolver) }
        for _ in 0..<40 {
            await expectedAnswers(window, 7, from: a)
            window.complete(await window.acquire(c), resolver: c, answered: false, expected: true)
            await expectedAnswers(window, 7, from: b)
            window.complete(await window.acquire(d), resolver: d, answered: false, expected: true)
        }
        #expect(window.stats.decreases == 1 && window.stats.signals == 80, "\(window.stats)")
        // The scan's own congestion on top: a and b lose half their answers too.
        for _ in 0..<10 {
            for resolver in [a, b] {
                await expectedAnswers(window, 3, from: resolver)
                window.complete(await window.acquire(resolver), resolver: resolver, answered: false, expected: true)
                window.complete(await window.acquire(c), resolver: c, answered: false, expected: true)
            }
        }
        #expect(window.stats.decreases > 1, "\(window.stats)")
    }

    /// A timeout tells whether other expected answers were lost while it was in flight (a quiet
    /// retry's timeout is clean evidence only when it was lost alone, `CongestionWindow.timeoutRule`).
    @Test func aTimeoutKnowsWhetherOthersWereLostMeanwhile() async {
        let window = CongestionWindow(ceiling: 64, initial: 64, floor: 8)
        await expectedAnswers(window, 1, from: a)
        await expectedAnswers(window, 1, from: b)
        let alone = await window.acquire(b)
        await expectedAnswers(window, 5, from: a)
        #expect(!window.complete(alone, resolver: b, answered: false, expected: true).othersLost)
        let together = await window.acquire(b)
        window.complete(await window.acquire(a), resolver: a, answered: false, expected: true)
        #expect(window.complete(together, resolver: b, answered: false, expected: true).othersLost)
        // A silent address's own timeouts are no one's loss.
        let third = await window.acquire(b)
        window.complete(await window.acquire(Endpoint(address: .v4(0xC000_0209), port: 53)), resolver: Endpoint(address: .v4(0xC000_0209), port: 53),
                        answered: false, expected: true)
        #expect(!window.complete(third, resolver: b, answered: false, expected: true).othersLost)
    }

    /// Whether `condition` holds within 10 s, polled between yields (a waiter's enqueueing is
    /// awaited by what it changes, not by a sleep).
    static func eventually(_ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition() {
            if ContinuousClock.now > deadline { return false }
            await Task.yield()
        }
        return true
    }

    /// A full window makes the next query wait until a place frees.
    @Test func aFullWindowMakesQueriesWait() async throws {
        let window = CongestionWindow(ceiling: 2, initial: 2, floor: 1)
        window.complete(await window.acquire(b), resolver: b, answered: true, expected: false)
        let t1 = await window.acquire(b)
        let t2 = await window.acquire(b)
        let third = Task { await window.acquire(b) }
        #expect(await Self.eventually { window.stats.waited == 1 })
        window.complete(t1, resolver: b, answered: true, expected: false)
        let t3 = await third.value
        window.complete(t2, resolver: b, answered: true, expected: false)
        window.complete(t3, resolver: b, answered: true, expected: false)
        // A waiting query of a cancelled scan goes on at once.
        let u1 = await window.acquire(b)
        let u2 = await window.acquire(b)
        let waiting = Task { await window.acquire(b) }
        #expect(await Self.eventually { window.stats.waited == 2 })
        waiting.cancel()
        _ = await waiting.value
        window.complete(u1, resolver: b, answered: true, expected: false)
        window.complete(u2, resolver: b, answered: true, expected: false)
    }

    /// Issue 27, item 2: the first burst of a scan of many addresses is busy (uncounted queries to
    /// never-answered addresses count as load), and a quiet retry waits until at most half a window
    /// of queries is in flight.
    @Test func aQuietRetryWaitsForHalfAWindow() async throws {
        let window = CongestionWindow(ceiling: 1000, initial: 64, floor: 8)  // quiet: at most 32 in flight
        let burst = (0..<40).map { Endpoint(address: .v4(0xC000_0200 + UInt32($0)), port: 53) }
        var tickets: [CongestionWindow.Ticket] = []
        for address in burst { tickets.append(await window.acquire(address)) }
        let granted = Flag()
        let released = Task {
            let ticket = await window.acquire(a, quiet: true)
            granted.set()
            return ticket
        }
        try await Task.sleep(for: .milliseconds(50))
        #expect(!granted.value)
        // 40 in flight: the retry still waits. 8 more complete: 32 left, quiet.
        for (ticket, address) in zip(tickets.prefix(7), burst) {
            window.complete(ticket, resolver: address, answered: false, expected: false)
        }
        try await Task.sleep(for: .milliseconds(50))
        #expect(!granted.value)
        window.complete(tickets[7], resolver: burst[7], answered: false, expected: false)
        let retry = await released.value
        window.complete(retry, resolver: a, answered: true, expected: false)
        #expect(window.stats.quietRetries == 1 && window.stats.quietRetriesAnswered == 1)
        for (ticket, address) in zip(tickets.dropFirst(8), burst.dropFirst(8)) {
            window.complete(ticket, resolver: address, answered: true, expected: false)
        }
        // With nothing in flight a quiet retry goes at once.
        let idle = await window.acquire(a, quiet: true)
        window.complete(idle, resolver: a, answered: true, expected: false)
        #expect(window.stats.quietRetries == 2)
    }
}

/// Set once, read from another task.
private final class Flag: Sendable {
    private let state = Mutex(false)
    func set() { state.withLock { $0 = true } }
    var value: Bool { state.withLock { $0 } }
}
