import FEC
import LinkSim
import Reports
import Testing

/// Small hand-made paths where the right answer is known packet by packet.
@Suite struct LinkSimulatorTests {
    /// A path with opportunities every `gap` ms; `lost` indices of the data stream are lost.
    static func channels(count: Int, lost: Set<Int>, gap: Double = 2, delay: Double = 50, feedbackLost: Set<Int> = [])
        throws -> (Channel, Channel)
    {
        let data = try TraceFates(packets: (0..<count).map { (Double($0) * gap, !lost.contains($0), lost.contains($0) ? nil : delay) })
        let feedback = try TraceFates(packets: (0..<count).map {
            (Double($0) * gap, !feedbackLost.contains($0), feedbackLost.contains($0) ? nil : delay)
        })
        return (Channel(trace: data, offset: 0), Channel(trace: feedback, offset: 0))
    }

    static func run(_ level: FECLevel, opportunities: Int, lost: Set<Int>, count: Int = 10_000, gap: Double = 1,
                    traffic: TrafficPattern = .greedy, arq: ARQConfiguration = ARQConfiguration()) throws -> LinkMetrics {
        let (data, feedback) = try channels(count: count, lost: lost, gap: gap)
        var sim = LinkSimulator(settings: .init(level: level, arq: arq, traffic: traffic, opportunities: opportunities, seed: 1),
                                data: data, feedback: feedback)
        return sim.run()
    }

    @Test func aGapIsNACKedAndRepairedBeforeTheTimer() throws {
        let m = try Self.run(.none, opportunities: 50, lost: [3])
        #expect(m.originals == 50)
        #expect(m.firstTransmissionsLost == 1)
        #expect(m.retransmissionsByNACK == 1 && m.retransmissionsByRTO == 0)
        #expect(m.repairedByARQ == 1 && m.deliveredDirect == 49 && m.lost == 0)
        #expect(m.retransmissionsSpurious == 0)
        #expect(m.nackEntries >= 1)
        // Packet 3 arrives at >= 100 ms NACK delay + feedback 50 ms + resend 50 ms after its gap showed.
        #expect(m.stalls.totalCount == 1)
        #expect(m.stalls.max >= 200_000)
    }

    @Test func theLastPacketLostIsLeftToTheTimer() throws {
        // Nothing after packet 4 shows the gap, so only the RTO can repair it.
        let m = try Self.run(.none, opportunities: 5, lost: [4])
        #expect(m.retransmissionsByRTO == 1 && m.retransmissionsByNACK == 0)
        #expect(m.repairedByARQ == 1 && m.lost == 0)
        #expect(m.timerExpiries >= 1)
    }

    @Test func gapsLongerThanTheMaximumAreNotNACKed() throws {
        var arq = ARQConfiguration()
        arq.nackMaxGap = 4
        let m = try Self.run(.none, opportunities: 100, lost: Set(10..<20), arq: arq)
        #expect(m.retransmissionsByNACK == 0)
        #expect(m.retransmissionsByRTO == 10)
        #expect(m.lost == 0)
    }

    @Test func oneLossPerGroupIsRebuiltWithoutARQ() throws {
        // balanced = 12 originals then 3 repair symbols: 15 opportunities per group; lose one original each.
        let lost = Set(stride(from: 5, to: 15 * 40, by: 15))
        let m = try Self.run(.balanced, opportunities: 15 * 40, lost: lost)
        #expect(m.groups == 40)
        #expect(m.rebuiltByFEC == 40 && m.repairUsed == 40)
        #expect(m.groupsFailedFEC == 0 && m.residualLostFEC == 0)
        #expect(m.retransmissions == 0)
        #expect(m.verification.groups == 40 && m.verification.mismatches == 0)
    }

    @Test func aPartialGroupIsFlushedWithItsRepair() throws {
        // cbr at 10 packets/s: one original every 100 ms, so every group closes on the 20 ms timeout.
        let m = try Self.run(.balanced, opportunities: 5000, lost: [], gap: 2, traffic: TrafficPattern(kind: .cbr, rate: 10))
        #expect(m.originals == 100)  // 5000 opportunities x 2 ms = 10 s at 10 per second
        #expect(m.groups == m.originals && m.groupsFlushed == m.groups)
        #expect(m.repairSent == m.groups)  // ceil(1 x 3 / 12) = 1 repair per one-packet group
    }

    @Test func fourLossesInAGroupOfTwelvePlusThreeFailAndARQRepairs() throws {
        let m = try Self.run(.balanced, opportunities: 15, lost: [0, 1, 2, 3])
        #expect(m.groups == 1 && m.groupsFailedFEC == 1 && m.residualLostFEC == 4)
        #expect(m.rebuiltByFEC == 0 || m.rebuiltByFEC + m.repairedByARQ == 4)
        #expect(m.lost == 0)
    }

    @Test func withoutARQLossesStayLost() throws {
        var arq = ARQConfiguration()
        arq.enabled = false
        let m = try Self.run(.none, opportunities: 100, lost: [7, 50], arq: arq)
        #expect(m.lost == 2 && m.retransmissions == 0 && m.feedbackMessages == 0)
        #expect(m.deliveredDirect == 98)
    }
}
