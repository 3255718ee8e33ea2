import Base
import Testing

@Suite struct IntervalTests {
    /// Reference values from R's binom.test (Clopper-Pearson).
    @Test func clopperPearsonMatchesPublishedValues() throws {
        let a = try #require(ClopperPearsonInterval(successes: 5, trials: 10))
        #expect(abs(a.low - 0.187086) < 1e-5 && abs(a.high - 0.812914) < 1e-5)
        let b = try #require(ClopperPearsonInterval(successes: 0, trials: 10))
        #expect(b.low == 0 && abs(b.high - 0.308497) < 1e-5)
        let c = try #require(ClopperPearsonInterval(successes: 3, trials: 1000))
        #expect(abs(c.low - 0.000618) < 2e-6 && abs(c.high - 0.008742) < 2e-6)
        #expect(ClopperPearsonInterval(successes: 1, trials: 0) == nil)
    }

    @Test func independentClustersHaveNoDesignEffectAndWholeClustersHaveTheirSize() {
        // Every cluster of 10 is all-lost or all-kept: the design effect is the cluster size.
        var whole = ClusteredProportion()
        for i in 0..<1000 { whole.record(events: i % 10 == 0 ? 10 : 0, of: 10) }
        #expect(abs((whole.designEffect ?? 0) - 10) < 0.1)
        // One event in each of 10 % of clusters of 1: plain binomial, design effect 1.
        var single = ClusteredProportion()
        for i in 0..<1000 { single.record(events: i % 10 == 0 ? 1 : 0, of: 1) }
        #expect(abs((single.designEffect ?? 0) - 1) < 0.01)
    }

    @Test func lossRunCountsCountPeriodsAndTransitions() {
        let c = LossRunCounts([false, true, true, false, true, false, false, true, true, true])
        #expect(c.lost == 6 && c.samples == 10)
        #expect(c.periods == [1, 1, 1])
        #expect(c.n01 == 3 && c.n10 == 2 && c.n11 == 3)
        #expect(c.meanPeriod == 2)
    }
}
