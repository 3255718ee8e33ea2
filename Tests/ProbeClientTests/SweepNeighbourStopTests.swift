import Base
import DNSWire
import Foundation
import ProbeClient
import ProbeProtocol
import Results
import Testing

/// Issue 31 (a): a stop while the neighbours of an answering address are being sent leaves part of
/// its prefix unprobed. The checkpoint keeps the unsent neighbours, the report names the prefixes
/// cut short, and a resume probes them first: over both runs every address gets one probe.
@Suite struct SweepNeighbourStopTests {
    @Test(.timeLimit(.minutes(1)))
    func aStopInsideAPrefixIsReportedAndTheResumeFinishesIt() async throws {
        let key = try ProbeKey(bytes: Array(repeating: 8, count: 32))
        let zone = try DNSName("vpn.sim.test")
        // One host in 64 answers: the first answer opens the whole /20 as its neighbours.
        let responder = try LoopbackResponder(key: key, zone: zone) { address, _ in address & 63 == 7 }
        defer { responder.stop() }
        let dir = "/tmp/tp-sweep-cut-\(UInt64.random(in: 0...UInt64.max))"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = SweepRanges.parseIPv4("127.33.0.0")!
        let ranges = SweepRanges(blocks: [.init(first: first, count: 4096)])
        var configuration = SweepConfiguration(ranges: ranges, seed: 14, rate: 4000, timeout: 0.3)
        configuration.port = responder.port
        configuration.neighbourPrefix = 20
        let state = SweepJournal.State(seed: 14, salt: 14, rangesDigest: SweepJournal.digest(ranges), rangesTotal: 4096,
                                       sample: nil, checkpoint: SweepCheckpoint(), runs: 1)

        let (scan, journal) = try SweepDiscoveryTests.sweepOnly(configuration, key: key, zone: zone, salt: 14, dir: dir)
        // Stop once a few hundred neighbours are out after the first batch of 400 (the /20's
        // neighbours take a second at 4,000 pps; the neighbour count is kept per expansion, the sent one per group).
        let stopper = Task.detached {
            while scan.sweeper.snapshot.sent < 700 { try? await Task.sleep(nanoseconds: 2_000_000) }
            scan.stop()
        }
        let cut = await scan.run(state: state, resumed: false)
        await stopper.value
        journal.close()
        #expect(cut.interrupted && !cut.complete)
        let pending = try #require(cut.checkpoint.pendingNeighbours, "the stop left no neighbour pending")
        #expect(!pending.isEmpty && pending.count < 4096 - 700)
        let report = SweepReport(result: cut, configuration: configuration, ranges: ranges, issues: [])
        #expect(report.neighbours?.cutShort == ["127.33.0.0/20"])
        #expect(report.neighbours?.unprobedNeighbours == pending.count)
        // Not one of the pending neighbours was probed yet.
        let before = responder.counts
        #expect(pending.allSatisfy { before[$0] == nil })

        let (resumed, journal2) = try SweepDiscoveryTests.sweepOnly(configuration, key: key, zone: zone, salt: 14, dir: dir)
        defer { journal2.close() }
        let rest = await resumed.run(state: try #require(journal2.readState()), resumed: true)
        #expect(rest.complete && !rest.interrupted)
        #expect(rest.checkpoint.pendingNeighbours == nil)
        let after = SweepReport(result: rest, configuration: configuration, ranges: ranges, issues: [])
        #expect(after.neighbours?.cutShort == nil)
        let counts = responder.counts
        #expect(counts.count == 4096, "\(4096 - counts.count) addresses never probed")
        #expect(counts.values.allSatisfy { $0 == 1 }, "\(counts.values.filter { $0 > 1 }.count) addresses probed twice")
        #expect(rest.answers.count == 64)
    }
}
