import Base
@testable import Capture
import Testing

/// Reassembly must be linear in the fragments and bounded in memory. The scaling is shown by the work
/// the reassembler counts (words of bitmap and buffer touched, queue entries visited), not by timing:
/// 16 times the fragments must cost about 16 times the work. scripts/bench-reassembly.sh times it.
@Suite struct FragmentReassemblerTests {
    static func key(_ id: Int) -> FragmentReassembler.Key {
        .init(source: .v4(0xc612_0001), destination: .v4(0xc612_0002), identification: UInt32(id), proto: 17)
    }

    /// `datagrams` datagrams of 8 fragments of 64 bytes, 64 in flight at a time, each sent in a shuffled
    /// order with one fragment repeated (a repeat after completion is a stray fragment, held until
    /// evicted): returns the completed count and the work.
    static func interleaved(datagrams: Int) -> (complete: Int, work: Int) {
        var r = FragmentReassembler()
        var rng = SplitMix64(seed: 7)
        let piece = [UInt8](repeating: 0x5a, count: 64)
        var complete = 0, dropped = 0
        var group = 0
        while group * 64 < datagrams {
            var sends: [(id: Int, index: Int)] = []
            for id in (group * 64)..<min(datagrams, (group + 1) * 64) {
                for index in 0..<8 { sends.append((id, index)) }
                sends.append((id, Int(rng.next() % 7)))
            }
            sends.shuffle(using: &rng)
            for send in sends {
                let outcome = piece.withUnsafeBytes { bytes in
                    r.add(key: key(send.id), offset: send.index * 64, moreFragments: send.index < 7, data: bytes,
                          now: Int64(group) * 1_000_000, dropped: &dropped)
                }
                if case .complete(let datagram) = outcome {
                    complete += 1
                    if datagram.count != 8 * 64 { Issue.record("datagram of \(datagram.count) bytes") }
                }
            }
            group += 1
        }
        return (complete, r.work)
    }

    @Test func workGrowsLinearlyWithTheFragments() {
        let small = Self.interleaved(datagrams: 640)     // 5,760 fragments
        let large = Self.interleaved(datagrams: 10_240)  // 92,160 fragments
        #expect(small.complete == 640 && large.complete == 10_240)
        let ratio = Double(large.work) / Double(small.work)
        // About one unit per 64-byte fragment, a little more once stray repeats fill the table and
        // evictions begin (the larger run only): linear, never growing with the count.
        #expect(ratio < 16 * 1.25, "work \(small.work) -> \(large.work), ratio \(ratio) for 16x the fragments")
        #expect(Double(large.work) / Double(10_240 * 9) < 1.5)
    }

    /// 10,000 and 160,000 overlapping 8-byte fragments of one datagram that never completes (the shape
    /// that took 23 s): the work per fragment stays constant and the memory is one 64 KiB buffer,
    /// however many fragments repeat.
    @Test func aFloodOfOverlappingFragmentsCostsConstantWorkEach() {
        func flood(_ count: Int) -> Int {
            var r = FragmentReassembler()
            var dropped = 0
            let bytes = [UInt8](repeating: 1, count: 8)
            for i in 0..<count {
                // Every offset but 8 is covered, over and over; the last fragment says the datagram ends at 65,528.
                let offset = i == 0 ? 65_520 : (i * 8) % 65_520 == 8 ? 16 : (i * 8) % 65_520
                _ = bytes.withUnsafeBytes {
                    r.add(key: Self.key(1), offset: offset, moreFragments: i != 0, data: $0, now: 0, dropped: &dropped)
                }
            }
            #expect(r.drain() == count)
            return r.work
        }
        let small = flood(10_000), large = flood(160_000)
        let ratio = Double(large) / Double(small)
        #expect(ratio < 16 * 1.1, "work \(small) -> \(large), ratio \(ratio)")
    }

    @Test func bytesPastTheLastFragmentsEndAreRejected() {
        var r = FragmentReassembler()
        var dropped = 0
        let a = [UInt8](repeating: 0xaa, count: 16), b = [UInt8](repeating: 0xbb, count: 16)
        _ = a.withUnsafeBytes { r.add(key: Self.key(1), offset: 8, moreFragments: true, data: $0, now: 0, dropped: &dropped) }
        // The last fragment says the datagram ends at 16, but bytes up to 24 arrived: inconsistent.
        let outcome = b.withUnsafeBytes { r.add(key: Self.key(1), offset: 0, moreFragments: false, data: $0, now: 0, dropped: &dropped) }
        guard case .rejected = outcome else { Issue.record("expected a rejection, got \(outcome)"); return }
        #expect(dropped == 1)
        #expect(r.drain() == 0)
    }

    @Test func theFirstFragmentToCoverAByteWins() {
        var r = FragmentReassembler()
        var dropped = 0
        let a = [UInt8](repeating: 0xaa, count: 16), b = [UInt8](repeating: 0xbb, count: 24)
        _ = a.withUnsafeBytes { r.add(key: Self.key(2), offset: 8, moreFragments: true, data: $0, now: 0, dropped: &dropped) }
        let outcome = b.withUnsafeBytes { r.add(key: Self.key(2), offset: 0, moreFragments: false, data: $0, now: 0, dropped: &dropped) }
        guard case .complete(let datagram) = outcome else { Issue.record("expected a complete datagram, got \(outcome)"); return }
        #expect(datagram == [UInt8](repeating: 0xbb, count: 8) + [UInt8](repeating: 0xaa, count: 16))
        #expect(dropped == 0)
    }

    @Test func inFlightDatagramsAreBoundedAndTheOldestGoesFirst() {
        var r = FragmentReassembler(maxPending: 4)
        var dropped = 0
        let bytes = [UInt8](repeating: 0, count: 8)
        for id in 0..<10 {
            _ = bytes.withUnsafeBytes { r.add(key: Self.key(id), offset: 0, moreFragments: true, data: $0, now: Int64(id), dropped: &dropped) }
        }
        #expect(dropped == 6)
        #expect(r.drain() == 4)
    }
}
