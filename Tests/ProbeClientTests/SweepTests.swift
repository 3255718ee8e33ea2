import Base
import Foundation
import DNSWire
import ProbeClient
import ProbeProtocol
import Testing
import Results

/// The sweep's pieces that need no network: range lists, the permutation, the probe's own matching.
@Suite struct SweepTests {
    @Test func rangeListFormats() {
        let text = """
            # a country list
            192.0.2.0/24, XX
            198.51.100.10 - 198.51.100.19   # ten
            203.0.113.7
            203.0.113.0/30 ; overlaps the single address below it? no: 0-3
            2001:db8::/32
            198.51.100.300
            198.51.100.0/33
            198.51.100.20-198.51.100.19
            """
        let r = SweepRanges(bytes: Array(text.utf8), source: "list.txt")
        #expect(r.total == 256 + 10 + 1 + 4)
        #expect(r.issues.map(\.line) == [6, 7, 8, 9])
        // An exhaustive IPv6 prefix refuses the sweep (SweepIPv6Tests).
        #expect(r.issues[0].reason.contains("IPv6") && r.refused.map(\.line) == [6])
        #expect(r.issues[0].description.hasPrefix("list.txt:6:"))
        #expect(r.address(at: 0) == SweepRanges.parseIPv4("192.0.2.0"))
        #expect(r.address(at: 256) == SweepRanges.parseIPv4("198.51.100.10"))
        #expect(r.address(at: r.total - 1) == SweepRanges.parseIPv4("203.0.113.7"))
    }

    @Test func overlapsAreMergedAndHostBitsMasked() {
        let r = SweepRanges(bytes: Array("192.0.2.77/24\n192.0.2.128-192.0.3.1\n192.0.2.5\n".utf8), source: "x")
        #expect(r.blocks.count == 1)
        #expect(r.total == 258)
        #expect(r.issues.isEmpty)
    }

    @Test func strictDottedQuad() {
        for bad in ["1.2.3", "1.2.3.4.5", "01.2.3.4", "1.2.3.256", "a.b.c.d", "1..3.4", ""] {
            #expect(SweepRanges.parseIPv4(bad[...]) == nil, "\(bad)")
        }
        #expect(SweepRanges.parseIPv4("0.0.0.0") == 0)
        #expect(SweepRanges.parseIPv4("255.255.255.255") == UInt32.max)
    }

    @Test(arguments: [1, 2, 5, 255, 4096, 70_001] as [UInt64])
    func permutationIsABijection(count: UInt64) {
        let p = SweepPermutation(count: count, seed: 21)
        var seen = [Bool](repeating: false, count: Int(count))
        var n: UInt64 = 0
        for position in 0..<p.domain {
            guard let v = p.value(at: position) else { continue }
            #expect(!seen[Int(v)])
            seen[Int(v)] = true
            n += 1
        }
        #expect(n == count)
        #expect(p.domain <= max(4, 4 * count))
    }

    @Test func permutationDependsOnTheSeedAndScatters() {
        let a = (0..<64).compactMap { SweepPermutation(count: 65_536, seed: 1).value(at: $0) }
        let b = (0..<64).compactMap { SweepPermutation(count: 65_536, seed: 2).value(at: $0) }
        #expect(a != b)
        // Consecutive probes do not walk one /24: the first 64 land in many.
        #expect(Set(a.map { $0 >> 8 }).count > 32)
    }

    func probe(key: ProbeKey, salt: UInt16 = 7) throws -> SweepProbe {
        let prober = Prober(engine: QueryEngine(seed: 1), key: key)
        return SweepProbe(prober: prober, zone: try DNSName("vpn.sim.test"), salt: salt)
    }

    /// An answer names its address by its own question; another key or another run's salt is not ours.
    @Test func answersAreMatchedByTheirOwnName() throws {
        let key = try ProbeKey(bytes: Array(repeating: 3, count: 32))
        let sweep = try probe(key: key)
        let target = SweepRanges.parseIPv4("198.19.4.5")!
        let query = try #require(sweep.query(for: target, millis: 100, id: 9))
        var message = try DNSMessage(parsing: query)
        message.header.isResponse = true
        message.edns = nil
        let response = try message.serialized()
        let answer = try #require(sweep.match(response, source: target, millis: 140))
        #expect(answer.address == "198.19.4.5")
        #expect(answer.from == nil)
        #expect(answer.failure == .noAnswer)
        #expect(answer.answering)
        #expect(abs((answer.rttMs ?? 0) - 40) < 0.001)
        let elsewhere = try #require(sweep.match(response, source: SweepRanges.parseIPv4("192.0.2.1")!, millis: 140))
        #expect(elsewhere.from == "192.0.2.1" && elsewhere.address == "198.19.4.5")
        #expect(try probe(key: key, salt: 8).match(response, source: target, millis: 140) == nil)
        let other = try ProbeKey(bytes: Array(repeating: 4, count: 32))
        #expect(try probe(key: other).match(response, source: target, millis: 140) == nil)
        // A query is not an answer.
        #expect(sweep.match(query, source: target, millis: 140) == nil)
        // REFUSED does not go on to the MTU scan.
        message.header.rcode = .refused
        let refused = try #require(sweep.match(try message.serialized(), source: target, millis: 140))
        #expect(refused.failure == .refused && !refused.answering)
    }

    /// A forged answer is not ours: the probe's own name with another address in its nonce under
    /// the tag it had (what an off-path forger who saw one probe could send for an address it never
    /// saw probed), or with any byte of its tag changed. Only an answer whose name carries the
    /// HMAC-SHA256 tag of its own bytes names an address.
    @Test func forgedAnswersAreRejected() throws {
        let key = try ProbeKey(bytes: Array(repeating: 3, count: 32))
        let sweep = try probe(key: key)
        let zone = try DNSName("vpn.sim.test")
        let target = SweepRanges.parseIPv4("198.19.4.5")!
        var message = try DNSMessage(parsing: try #require(sweep.query(for: target, millis: 100, id: 9)))
        message.header.isResponse = true
        message.edns = nil
        let labels = try #require(message.questions[0].name.prefixLabels(droppingSuffix: zone))
        let sealed = try LabelEncoding.base32.decode(try #require(labels.first))
        try #require(sealed.count == ProbeMeta.byteCount)
        func answer(_ block: [UInt8]) throws -> [UInt8] {
            var forged = message
            forged.questions[0].name = try DNSName(payload: LabelEncoding.base32.encode(block), under: zone)
            return try forged.serialized()
        }
        #expect(sweep.match(try answer(sealed), source: target, millis: 140)?.address == "198.19.4.5")
        var moved = sealed
        moved[9] ^= 1  // the nonce's last byte: 198.19.4.4
        #expect(sweep.match(try answer(moved), source: SweepRanges.parseIPv4("198.19.4.4")!, millis: 140) == nil)
        for index in (ProbeMeta.byteCount - ProbeMeta.tagLength)..<ProbeMeta.byteCount {
            var tampered = sealed
            tampered[index] ^= 0x10
            #expect(sweep.match(try answer(tampered), source: target, millis: 140) == nil, "tag byte \(index) changed")
        }
    }
}

/// The journal a resume reads: the state round-trips, appended lines come back in order, and a line
/// cut short by a hard kill is skipped rather than failing the resume.
@Suite struct SweepJournalTests {
    @Test func resumeReadsWhatWasJournalled() throws {
        let dir = "/tmp/tp-sweep-journal-\(UInt64.random(in: 0...UInt64.max))"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let journal = try SweepJournal(directory: dir)
        #expect(journal.readState() == nil)
        let state = SweepJournal.State(seed: 9, salt: 3, rangesDigest: "abc", rangesTotal: 4096, sample: nil,
                                       checkpoint: SweepCheckpoint(position: 100, emitted: 60, settled: false), runs: 1)
        journal.write(state)
        #expect(journal.readState() == state)
        let a = SweepAnswer(address: "198.19.0.1", from: nil, failure: nil, detail: nil, rttMs: 1, responseSize: 90)
        var b = a
        b.address = "198.19.0.2"
        b.failure = .unauthenticated
        journal.append(a)
        journal.append(b)
        journal.append(ScanPair(resolver: "198.19.0.1:53", domain: "vpn.sim.test", accepted: true))
        journal.close()
        let handle = try #require(FileHandle(forWritingAtPath: dir + "/" + SweepJournal.answersFile))
        _ = handle.seekToEndOfFile()
        handle.write(Data(#"{"address":"198.19.0.3","respo"#.utf8))
        try handle.close()
        #expect(journal.readAnswers() == [a, b])
        #expect(journal.readPairs().map(\.resolver) == ["198.19.0.1:53"])
        #expect(SweepJournal.digest(SweepRanges(blocks: [.init(first: 1, count: 2)]))
                != SweepJournal.digest(SweepRanges(blocks: [.init(first: 1, count: 3)])))
    }
}
