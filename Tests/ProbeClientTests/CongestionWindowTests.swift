import Base
import ProbeClient
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

    /// Slow start: one more per answer up to the ceiling; a lost answer that should have come halves
    /// the window once per window of queries (a second loss of the same window does not).
    @Test func additiveIncreaseMultiplicativeDecrease() async {
        let window = CongestionWindow(ceiling: 64, initial: 4, floor: 2)
        window.complete(await window.acquire(a), resolver: a, answered: true, expected: false)
        #expect(window.window == 5)
        for _ in 0..<100 { window.complete(await window.acquire(a), resolver: a, answered: true, expected: false) }
        #expect(window.window == 64)
        let first = await window.acquire(a)
        let second = await window.acquire(a)
        #expect(window.complete(first, resolver: a, answered: false, expected: true))
        #expect(window.window == 32)
        // Sent before the decrease: congested, but no second halving.
        #expect(window.complete(second, resolver: a, answered: false, expected: true))
        #expect(window.window == 32 && window.stats.decreases == 1 && window.stats.signals == 2)
        // Congestion avoidance above ssthresh: 1/window per answer.
        for _ in 0..<34 { window.complete(await window.acquire(a), resolver: a, answered: true, expected: false) }
        #expect(window.window == 33)
        // A size probe's own timeout (not expected) is no signal.
        #expect(!window.complete(await window.acquire(a), resolver: a, answered: false, expected: false))
        #expect(window.stats.decreases == 1)
        for _ in 0..<20 {
            let t = await window.acquire(a)
            window.complete(t, resolver: a, answered: false, expected: true)
        }
        #expect(window.window == 2 && window.stats.smallestWindow == 2)
    }

    /// A full window makes the next query wait until a place frees.
    @Test func aFullWindowMakesQueriesWait() async throws {
        let window = CongestionWindow(ceiling: 2, initial: 2, floor: 1)
        window.complete(await window.acquire(b), resolver: b, answered: true, expected: false)
        let t1 = await window.acquire(b)
        let t2 = await window.acquire(b)
        let third = Task { await window.acquire(b) }
        try await Task.sleep(for: .milliseconds(50))
        #expect(window.stats.waited == 1)
        window.complete(t1, resolver: b, answered: true, expected: false)
        let t3 = await third.value
        window.complete(t2, resolver: b, answered: true, expected: false)
        window.complete(t3, resolver: b, answered: true, expected: false)
        // A waiting query of a cancelled scan goes on at once.
        let u1 = await window.acquire(b)
        let u2 = await window.acquire(b)
        let waiting = Task { await window.acquire(b) }
        try await Task.sleep(for: .milliseconds(50))
        waiting.cancel()
        _ = await waiting.value
        window.complete(u1, resolver: b, answered: true, expected: false)
        window.complete(u2, resolver: b, answered: true, expected: false)
    }
}
