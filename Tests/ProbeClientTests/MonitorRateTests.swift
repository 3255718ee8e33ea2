@testable import ProbeClient
import Base
import Testing
@testable import Results

/// `monitor --rate-interval`: when each pair is measured, what is kept of the measurements, and the
/// order of the resolver files that follows them. Pure logic, no network.
@Suite struct MonitorRateTests {
    static func sample(at: Double, rate: Double, lost: Int = 0, sent: Int = 100) -> RateSample {
        RateSample(at: at, capacity: capacity(rate: rate, lost: lost, sent: sent))
    }

    static func capacity(rate: Double, lost: Int = 0, sent: Int = 100) -> PairCapacity {
        PairCapacity(resolver: "192.0.2.1:53", domain: "vpn.lab.test", queryCharacters: 100, answerBytes: 500,
                                    steps: [], sustainableRate: rate, troubledRate: rate * 1.1, limitedBy: .rateLimiter,
                                    evidence: "test", lossAtSustainable: .init(count: lost, samples: sent),
                                    rttAtSustainableMs: .nearestRank([1, 2, 3]), recovered: true, seconds: 12)
    }

    /// Never-measured pairs that are up start at once, at most `parallel` at a time; a pair being
    /// measured or down is not started; a pair is due again `interval` after its last start.
    @Test func scheduleStartsDuePairsWithinTheParallelBound() {
        var s = RateSchedule(pairs: 4, interval: 30, parallel: 2)
        #expect(s.start(now: 0, up: [true, false, true, true]) == [0, 2])
        #expect(s.measuring == [0, 2])
        #expect(s.start(now: 1, up: [true, true, true, true]).isEmpty, "both slots are taken")
        s.finish(0)
        #expect(s.start(now: 5, up: [true, true, true, true]) == [1], "never measured comes before due again")
        s.finish(1)
        s.finish(2)
        #expect(s.start(now: 20, up: [true, true, true, true]) == [3])
        #expect(s.start(now: 29.9, up: [true, true, true, true]).isEmpty, "pair 0 started at 0, due at 30")
        #expect(s.start(now: 30, up: [true, true, true, true]) == [0])
        s.finish(0)
        s.finish(3)
        // Pair 1 (started at 5) and pair 2 (at 0) are both due at 40: the longer ago first; a pair
        // that is down waits.
        #expect(s.start(now: 40, up: [true, true, true, false]) == [2, 1])
    }

    /// Without --rate-interval nothing is ever due again after the first measurement.
    @Test func anInfiniteIntervalMeasuresOnce() {
        var s = RateSchedule(pairs: 1, interval: .infinity, parallel: 1)
        #expect(s.start(now: 0, up: [true]) == [0])
        s.finish(0)
        #expect(s.start(now: 1e9, up: [true]).isEmpty)
    }

    /// The first, the latest, the lowest and the highest are kept, and the count.
    @Test func summaryKeepsFirstLastLowestHighest() throws {
        var p = PairStability(resolver: "192.0.2.1:53", domain: "vpn.lab.test", spare: false)
        #expect(p.rates == nil)
        for (at, rate) in [(0.0, 100.0), (30, 40), (60, 150), (90, 40), (120, 90)] { p.record(rate: Self.sample(at: at, rate: rate)) }
        let r = try #require(p.rates)
        #expect(r.measurements == 5 && r.first.at == 0 && r.last.at == 120)
        #expect(r.lowest.sustainableRate == 40 && r.lowest.at == 30, "the earliest of equals")
        #expect(r.highest.sustainableRate == 150 && r.highest.at == 60)
        #expect(Self.sample(at: 0, rate: 100, lost: 10).answeredRate == 90)
    }

    /// Up pairs with a measured rate by goodput (answered rate x bytes per answer), best first; then
    /// the unmeasured ones, accepted before spares in scan order; then those measured at 0 q/s.
    /// Pairs that are down or that the engine cannot use are left out.
    @Test func fileOrderFollowsTheLatestGoodput() {
        func pair(_ n: Int, up: Bool = true, spare: Bool = false, rate: Double? = nil, lost: Int = 0) -> PairStability {
            var p = PairStability(resolver: "192.0.2.\(n):53", domain: "vpn.lab.test", spare: spare)
            p.record(ok: up, at: 0, rttMs: 1, failure: up ? nil : "timeout")
            if let rate { p.record(rate: Self.sample(at: 0, rate: rate, lost: lost)) }
            return p
        }
        let pairs = [pair(0, spare: true), pair(1), pair(2, rate: 50), pair(3, rate: 100, lost: 60), pair(4, rate: 0),
                     pair(5, up: false, rate: 500), pair(6, rate: 45), pair(7, rate: 300)]
        // Pair 7 cannot carry the engine; pair 2 carries twice the bytes per answer of the others.
        let order = ResolverFileOrder.order(pairs) { i in i == 7 ? nil : (i == 2 ? 200 : 100) }
        #expect(order == [2, 6, 3, 1, 0, 4], "\(order)")
        // With no rate known it is the order the monitor always used: accepted first, scan order.
        let plain = [pair(0, spare: true), pair(1), pair(2)]
        #expect(ResolverFileOrder.order(plain) { _ in 100 } == [1, 2, 0])
    }

    /// Ending a step early never changes its verdict: the failures that end it make it troubled
    /// however few of its queries were sent.
    @Test func aStepEndedEarlyIsTroubledByTheSameRule() {
        let settings = CapacitySettings()
        for planned in [2, 10, 50, 99, 100, 101, 250, 1000] {
            let enough = settings.failuresToEnd(planned: planned)
            #expect(enough >= settings.minFailures)
            for sent in enough...planned {
                #expect(Double(enough) > settings.maxFailureRatio * Double(sent), "planned \(planned), sent \(sent)")
            }
            // One failure fewer would not have made the whole step troubled.
            #expect(enough - 1 < settings.minFailures || Double(enough - 1) <= settings.maxFailureRatio * Double(planned))
        }
    }
}

/// The median RTT of the latest checks, kept without sorting a copy per check.
@Suite struct PairStabilityRTTTests {
    /// Against a straightforward median of the latest 64 values, over 1,000 seeded random RTTs
    /// with repeats (the eviction must remove the right copy).
    @Test func rollingMedianMatchesAPlainOne() {
        var rng = SplitMix64(seed: 19)
        var p = PairStability(resolver: "192.0.2.1:53", domain: "vpn.lab.test", spare: false)
        var all: [Double] = []
        for i in 0..<1000 {
            let rtt = Double(rng.next() % 40) / 4
            p.record(ok: true, at: Double(i), rttMs: rtt, failure: nil)
            all.append(rtt)
            let window = all.suffix(64).sorted()
            #expect(p.rttP50Ms == window[(window.count - 1) / 2], "check \(i), seed 19")
        }
        #expect(PairStability.position(of: 2, in: [1, 2, 2, 3]) == 1 && PairStability.position(of: 9, in: [1, 2]) == 2)
    }
}
