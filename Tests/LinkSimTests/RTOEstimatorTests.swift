import LinkSim
import Testing

@Suite struct RTOEstimatorTests {
    @Test func firstAndLaterSamplesFollowRFC6298() {
        var rto = RTOEstimator(initialMs: 1000, minimumMs: 100, maximumMs: 60_000, backoffFactor: 2)
        #expect(rto.rtoMs == 1000)  // 2.1: before any sample
        rto.sample(200)  // 2.2: SRTT = R, RTTVAR = R/2, RTO = SRTT + 4 RTTVAR
        #expect(rto.srttMs == 200 && rto.rttvarMs == 100 && rto.rtoMs == 600)
        rto.sample(100)  // 2.3: RTTVAR = 3/4 100 + 1/4 |200 - 100| = 100; SRTT = 7/8 200 + 1/8 100 = 187.5
        #expect(rto.rttvarMs == 100 && rto.srttMs == 187.5 && rto.rtoMs == 587.5)
    }

    @Test func clampedToTheFloorAndCeiling() {
        var rto = RTOEstimator(initialMs: 1000, minimumMs: 100, maximumMs: 400, backoffFactor: 2)
        rto.sample(1)
        #expect(rto.rtoMs == 100)
        rto.sample(5000)
        #expect(rto.rtoMs == 400)
    }

    @Test func backoffMultipliesUpToTheMaximumAndASampleEndsIt() {
        var rto = RTOEstimator(initialMs: 300, minimumMs: 100, maximumMs: 1000, backoffFactor: 2)
        rto.backOff()
        #expect(rto.rtoMs == 600)
        rto.backOff()
        #expect(rto.rtoMs == 1000)
        rto.sample(100)
        #expect(rto.rtoMs == 300)
    }
}
