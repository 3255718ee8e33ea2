import ProbeClient
import Results
import Testing

/// `sweep --resume`: what must match the interrupted sweep, and the scan figures a sweep reports.
struct SweepResumeTests {
    private let state = SweepJournal.State.start(seed: 7, salt: 3, rangesDigest: "d", rangesTotal: 256, sample: nil, passes: 2,
                                                 shard: SweepShard("1/4")!, neighbourPrefix: 24)

    private func mismatch(digest: String = "d", seed: UInt64? = nil, sample: UInt64? = nil, shard: String = "1/4", passes: Int = 2,
                          prefix: Int? = 24) -> SweepJournal.State.ResumeMismatch? {
        state.resumeMismatch(rangesDigest: digest, seed: seed, sample: sample, shard: SweepShard(shard)!, passes: passes,
                             neighbourPrefix: prefix)
    }

    @Test func theSameSettingsGoOn() {
        #expect(mismatch() == nil)
        #expect(mismatch(seed: 7) == nil)
        #expect(state.pass == 1 && state.runs == 1 && state.checkpoint == SweepCheckpoint())
    }

    @Test func eachSettingThatFixesTheOrderIsNamed() {
        #expect(mismatch(digest: "e", seed: 8) == .ranges)
        #expect(mismatch(seed: 8) == .seed(given: 8, sweep: 7))
        #expect(mismatch(sample: 10) == .sample)
        #expect(mismatch(shard: "2/4") == .shard)
        #expect(mismatch(passes: 1) == .passes)
        #expect(mismatch(prefix: nil) == .neighbourPrefix)
    }

    @Test func aStateOfAnOlderSweepReadsAsOnePassOfTheWholeRanges() {
        let old = SweepJournal.State(seed: 7, salt: 3, rangesDigest: "d", rangesTotal: 256, sample: nil, checkpoint: SweepCheckpoint(), runs: 1)
        #expect(old.resumeMismatch(rangesDigest: "d", seed: nil, sample: nil, shard: .whole, passes: 1, neighbourPrefix: nil) == nil)
        #expect(old.resumeMismatch(rangesDigest: "d", seed: nil, sample: nil, shard: .whole, passes: 3, neighbourPrefix: nil) == .passes)
    }

    @Test func pairsNotTestedAreTheAnsweringAddressesTimesTheDomainsLessThoseMeasured() {
        let pairs = [ScanPair(resolver: "192.0.2.1:53", domain: "a.test", accepted: true, queries: 10),
                     ScanPair(resolver: "192.0.2.1:53", domain: "b.test", accepted: false, queries: 4),
                     ScanPair(resolver: "192.0.2.2:53", domain: "a.test", accepted: true, queries: 6)]
        let result = ScanResult.swept(pairs: pairs, answering: 3, domains: 2, measured: true, interrupted: true)
        #expect(result.notTested == 3 && result.queries == 20 && result.interrupted && result.pairs.count == 3)
        #expect(ScanResult.swept(pairs: [], answering: 3, domains: 2, measured: false, interrupted: false).notTested == 0)
    }
}
