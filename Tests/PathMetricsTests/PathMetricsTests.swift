import Base
import PathMetrics
import Testing
import Results

/// Every metric against values worked out by hand on small sequences.
@Suite struct PathMetricsTests {
    private func near(_ a: Double?, _ b: Double, _ tolerance: Double = 1e-4) -> Bool {
        guard let a else { return false }
        return abs(a - b) <= tolerance
    }

    @Test func wilsonMatchesPublishedValues() throws {
        // 5 of 10: 0.2366 ... 0.7634; 0 of 10: 0 ... 0.2775 (z = 1.96).
        let half = try #require(WilsonInterval(successes: 5, trials: 10))
        #expect(near(half.low, 0.2366) && near(half.high, 0.7634))
        let none = try #require(WilsonInterval(successes: 0, trials: 10))
        #expect(none.low == 0 && near(none.high, 0.2775))
        let all = try #require(WilsonInterval(successes: 10, trials: 10))
        #expect(all.high == 1 && near(all.low, 0.7225))
        #expect(WilsonInterval(successes: 0, trials: 0) == nil)
        let empty = Proportion(count: 0, samples: 0)
        #expect(empty.ratio == nil && empty.reason == "no samples")
    }

    @Test func lossPeriodsAndDistances() {
        // Lost at 1, 2, 5, 7: periods [1-2], [5], [7]; distances 1, 3, 2 (RFC 3357 section 4).
        let pattern = LossPattern(lostFlags: [false, true, true, false, false, true, false, true])
        #expect(pattern.lost == 4)
        #expect(pattern.periods == 3)
        #expect(pattern.periodLengths == ["1": 2, "2": 1])
        #expect(pattern.distances == ["1": 1, "2": 1, "3": 1])
        #expect(near(pattern.meanPeriodLength, 4.0 / 3.0))
        #expect(LossPattern(lostFlags: [false, false]).reason == "no loss observed")
    }

    @Test func twoStateGilbertFromTransitionCounts() throws {
        // "0001" ten times: n0 = 30, n01 = 10, n1 = 9, n10 = 9 -> p = 1/3, r = 1, loss 1/4.
        let trace = (0..<10).flatMap { _ in [false, false, false, true] }
        let fit = try #require(GilbertFit(lostFlags: trace).twoState)
        #expect(near(fit.p, 1.0 / 3.0) && near(fit.r, 1) && near(fit.loss, 0.25) && near(fit.meanBurst, 1))
        let thin = GilbertFit(lostFlags: [false, true, false])
        #expect(thin.twoState == nil && thin.twoStateReason != nil && thin.withH == nil)
    }

    /// Gilbert-Elliott channel: Good never loses, Bad loses with probability 1 - h.
    private func gilbertElliott(count: Int, p: Double, r: Double, h: Double, seed: UInt64) -> [Bool] {
        var rng = SplitMix64(seed: seed)
        var bad = false
        var out: [Bool] = []
        out.reserveCapacity(count)
        for _ in 0..<count {
            out.append(bad && Double.random(in: 0..<1, using: &rng) >= h)
            bad = bad ? Double.random(in: 0..<1, using: &rng) >= r : Double.random(in: 0..<1, using: &rng) < p
        }
        return out
    }

    @Test func twoStateFitRecoversPAndRWithin20Percent() throws {
        let trace = gilbertElliott(count: 20_000, p: 0.02, r: 0.35, h: 0, seed: 7)
        let fit = try #require(GilbertFit(lostFlags: trace).twoState)
        #expect(abs(fit.p - 0.02) / 0.02 < 0.2, "p = \(fit.p)")
        #expect(abs(fit.r - 0.35) / 0.35 < 0.2, "r = \(fit.r)")
    }

    @Test func gilbertWithHRecoversPRAndH() throws {
        let trace = gilbertElliott(count: 50_000, p: 0.03, r: 0.25, h: 0.3, seed: 11)
        let result = GilbertFit(lostFlags: trace)
        let fit = try #require(result.withH, "\(result.withHReason ?? "")")
        #expect(abs(fit.p - 0.03) / 0.03 < 0.2, "p = \(fit.p)")
        #expect(abs(fit.r - 0.25) / 0.25 < 0.2, "r = \(fit.r)")
        #expect(abs(fit.h - 0.3) < 0.1, "h = \(fit.h)")
    }

    @Test func reorderingRatioExtentAndThreeReordering() throws {
        // 2 arrives after 5, 6, 7 (extent 5 - 2 = 3, 3-reordered); 3 after 2 (extent 6 - 2 = 4, not 3-reordered).
        let r = Reordering(arrivalOrder: [0, 1, 5, 6, 7, 2, 3, 8])
        #expect(r.reordered == 2 && r.samples == 8)
        #expect(near(r.ratio.ratio, 0.25))
        #expect(r.maxExtent == 4 && r.extents == ["3": 1, "4": 1])
        #expect(r.threeReordered == 1)
        let inOrder = Reordering(arrivalOrder: [0, 2, 3, 9])
        #expect(inOrder.reordered == 0 && inOrder.maxExtent == nil)
    }

    @Test func rfc3550JitterAndRfc3393Ipdv() throws {
        let ms: UInt64 = 1_000_000
        // D1 = (17 - 5) - 10 = 2 -> J = 0.125; D2 = (25 - 17) - 10 = -2 -> J = 0.125 + 1.875 / 16.
        let j = InterarrivalJitter.milliseconds([(0, 5 * ms), (10 * ms, 17 * ms), (20 * ms, 25 * ms)])
        #expect(near(j, 0.2421875))
        #expect(InterarrivalJitter.milliseconds([(0, 1)]) == nil)
        // Delays 5, 7, lost, 6, 9: consecutive pairs give +2 and +3.
        let v = DelayVariation(delaysInSequence: [5 * ms, 7 * ms, nil, 6 * ms, 9 * ms])
        #expect(v.samples == 2 && near(v.p50, 2) && near(v.p90, 3) && near(v.min, 2) && near(v.max, 3))
        #expect(DelayVariation(delaysInSequence: [5 * ms, nil]).reason != nil)
    }

    @Test func rttPercentilesFromTheHistogram() throws {
        let d = Percentiles(nanoseconds: (1...100).map { UInt64($0) * 1_000_000 })
        #expect(near(d.min, 1, 0.01) && near(d.p50, 50, 0.1) && near(d.p99, 99, 0.1) && near(d.max, 100, 0.1))
        #expect(Percentiles(nanoseconds: []).p50 == nil)
    }

    @Test func classificationSplitsDirectionsAndCountsDuplicatesAndLate() throws {
        let ms: UInt64 = 1_000_000
        let tmax = 100 * ms
        let records = [
            // delivered, query seen twice (resolver retry), response once
            PathRecord(seq: 0, sentNanos: 0, view: ResponderView(copies: 2, arrivalIndex: 0), arrivals: [10 * ms]),
            // query lost upstream
            PathRecord(seq: 1, sentNanos: 1 * ms, view: ResponderView(copies: 0)),
            // response lost downstream
            PathRecord(seq: 2, sentNanos: 2 * ms, view: ResponderView(copies: 1, arrivalIndex: 1)),
            // late: after Tmax -> lost downstream and late
            PathRecord(seq: 3, sentNanos: 3 * ms, view: ResponderView(copies: 1, arrivalIndex: 2), arrivals: [300 * ms]),
            // no history at all
            PathRecord(seq: 4, sentNanos: 4 * ms),
            // delivered twice (response duplicated), arrives before seq 0's: reordered round trip
            PathRecord(seq: 5, sentNanos: 5 * ms, view: ResponderView(copies: 1, arrivalIndex: 3), arrivals: [8 * ms, 9 * ms]),
        ]
        let a = PathAnalysis(records: records, tmaxNanos: tmax)
        #expect(a.fates == [.delivered, .lostUp, .lostDown, .lostDown, .lostUnknown, .delivered])
        #expect(a.counts.answered == 2 && a.counts.lostUp == 1 && a.counts.lostDown == 2 && a.counts.late == 1)
        #expect(a.counts.lostUnknown == 1 && a.counts.duplicatesUp == 1 && a.counts.duplicatesDown == 1)
        #expect(a.loss.up.count == 1 && a.loss.up.samples == 5)
        #expect(a.loss.down.count == 2 && a.loss.down.samples == 4)
        #expect(a.loss.roundTrip.count == 4 && a.loss.roundTrip.samples == 6)
        // Arrival order 5 then 0: 0 is reordered (round trip and down: indexes 3 then 0).
        #expect(a.counts.reordered == 1 && a.reordering.down.reordered == 1 && a.reordering.up.reordered == 0)
        #expect(near(a.rtt.p50, 3, 0.01))
    }
}

@Suite struct LossTimelineTests {
    @Test func slicesCountLossAndMarkTheBurstWhereItBegins() {
        // 30 probes 10 ms apart: 300 ms, three 100 ms slices; a burst of 4 starting at probe 8 (slice 0).
        let sent = (0..<30).map { UInt64($0) * 10_000_000 }
        var fates = [PathFate](repeating: .delivered, count: 30)
        for i in 8..<12 { fates[i] = .lostUp }
        fates[25] = .lostDown
        let t = LossTimeline(sentNanos: sent, fates: fates)
        #expect(t.sliceMs == 100)
        #expect(t.slices.map(\.sent) == [10, 10, 10])
        #expect(t.slices[0].lostUp == 2 && t.slices[1].lostUp == 2)
        #expect(t.slices[0].longestBurst == 4)
        #expect(t.slices[1].longestBurst == 0)
        #expect(t.slices[2].lostDown == 1 && t.slices[2].longestBurst == 1)
    }

    @Test func aBurstAtTheEndIsClosed() {
        let t = LossTimeline(sentNanos: [0, 1, 2], fates: [.delivered, .lostUp, .lostDown])
        #expect(t.slices.count == 1 && t.slices[0].longestBurst == 2)
        #expect(LossTimeline(sentNanos: [], fates: []).slices.isEmpty)
    }
}
