import DNSWire
import ProbeProtocol
import ProbeServer
import Synchronization
import Testing

/// The responder's receive history: copies, gaps, window and ring bounds, eviction, drains.
@Suite struct PathStreamTableTests {
    /// A clock that advances 100 µs per reading, so receive times are predictable.
    static func table(_ limits: PathStreamTable.Limits = .init()) -> PathStreamTable {
        let now = Mutex<UInt64>(1_000_000)
        return PathStreamTable(limits: limits, clockMicros: { now.withLock { $0 += 100; return $0 } })
    }

    @Test func historyCountsCopiesAndLeavesGapsUnseen() throws {
        let t = Self.table()
        for seq: UInt32 in [0, 1, 1, 3] { _ = t.record(PathProbe(stream: 7, seq: seq)) }
        let h = t.record(PathProbe(stream: 7, seq: 4))
        #expect(h.baseSeq == 0 && h.entries.count == 5)
        #expect(h.entries.map(\.copies) == [1, 2, 0, 1, 1])
        // Receive order counts first copies only: 0, 1, 3, 4.
        #expect(h.entries.map(\.arrivalIndex) == [0, 1, 0, 2, 3])
        #expect(h.arrivals == 4)
        // The duplicate of 1 did not move 1's receive time.
        #expect(h.entries[1].receivedMicros == 1_000_200 && h.entries[4].receivedMicros == h.receivedMicros)
    }

    @Test func windowIsTheLast32SeqsAndTheRingForgetsOldOnes() throws {
        let t = Self.table(.init(ringSize: 64))
        for seq: UInt32 in 0..<100 { _ = t.record(PathProbe(stream: 1, seq: seq)) }
        let h = t.record(PathProbe(stream: 1, seq: 100))
        #expect(h.baseSeq == 69 && h.entries.count == PathReply.maxEntries && h.entries.allSatisfy { $0.copies == 1 })
        // Seq 20 is older than the ring (64 slots behind 100): a drain for it cannot vouch for anything.
        let old = t.record(PathProbe(stream: 1, seq: 20, drain: true))
        #expect(old.entries.isEmpty)
        // A drain does not record itself.
        let d = t.record(PathProbe(stream: 1, seq: 101, drain: true))
        #expect(d.drain && d.entries.last?.copies == 0 && d.arrivals == 101)
    }

    @Test func evictionForgetsTheLeastRecentlyUsedStreamAndSaysSoWhenItReturns() throws {
        let t = Self.table(.init(maxStreams: 2))
        _ = t.record(PathProbe(stream: 1, seq: 0))
        _ = t.record(PathProbe(stream: 2, seq: 0))
        _ = t.record(PathProbe(stream: 1, seq: 1))
        _ = t.record(PathProbe(stream: 3, seq: 0))   // evicts 2, the least recently used
        #expect(t.streamCount == 2)
        let back = t.record(PathProbe(stream: 2, seq: 5))
        // Stream 2 was forgotten: its history starts where it came back, not at 0.
        #expect(back.baseSeq == 5 && back.entries.count == 1)
        // A stream never seen: the responder can vouch that nothing of it arrived.
        let never = t.record(PathProbe(stream: 99, seq: 3, drain: true))
        #expect(never.baseSeq == 0 && never.entries.map(\.copies) == [0, 0, 0, 0])
        #expect(t.streamCount == 2)
    }

    @Test func responderAnswersAPathProbeWithAnAuthenticatedHistory() throws {
        let nonce: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]
        let probe = PathProbe(stream: 42, seq: 0, downloadBytes: 400, recordType: .txt)
        let name = try ProbeName.build(meta: probe.meta(nonce: nonce, totalCharacters: 100), zone: zone, key: key)
        let r = ProbeResponder(configuration: .init(zone: zone, key: key))
        let outcome = r.respond(to: try query(name))
        #expect(outcome.disposition == .path)
        let message = try DNSMessage(parsing: try #require(outcome.response))
        let payload = try DownloadLayout.extract(answers: message.answers, type: .txt, owner: name, zone: zone, expected: 400)
        #expect(payload.count == 400)
        let reply = try PathReply.open(payload[...], nonce: nonce, key: key)
        #expect(reply.seq == 0 && reply.entries.map(\.copies) == [1])
        // Another nonce (a replay under another probe) does not verify.
        #expect(throws: ProbeError.self) { try PathReply.open(payload[...], nonce: [9, 9, 9, 9, 9, 9, 9, 9], key: key) }
        // The QNAME maps back to the stream and seq.
        let identified = try PathProbe.identify(name, zone: zone, key: key)
        #expect(identified.probe == probe && identified.nonce == nonce)
        // A CNAME answer cannot hold 32 entries: the responder sends what fits.
        let cname = PathProbe(stream: 42, seq: 1, recordType: .cname)
        let cnameName = try ProbeName.build(meta: cname.meta(nonce: [8, 7, 6, 5, 4, 3, 2, 1]), zone: zone, key: key)
        let cnameOutcome = r.respond(to: try query(cnameName, .cname))
        #expect(cnameOutcome.disposition == .path)
    }

    @Test func pathProbeParametersRoundTrip() throws {
        let p = PathProbe(stream: PathProbe.maxStream, seq: .max, drain: true, downloadBytes: 65535, recordType: .aaaa)
        #expect(try PathProbe(meta: p.meta(nonce: Array(repeating: 0xAB, count: 8))) == p)
    }
}
