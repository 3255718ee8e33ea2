import Base
import DNSWire
import ProbeClient
import ProbeProtocol
import Testing
import Results

/// Explicit IPv6 lists in a sweep (issue #29): the entries a list takes, the cap that refuses an
/// exhaustive IPv6 sweep, the index space (IPv4 first), and the probe naming an IPv6 target.
@Suite struct SweepIPv6Tests {
    static func v6(_ text: String) -> UInt128 {
        guard case .v6(let hi, let lo)? = IPAddress(text) else { return 0 }
        return UInt128(hi) << 64 | UInt128(lo)
    }

    @Test func ipv6EntriesBesideIPv4Ones() {
        let text = """
            192.0.2.0/30
            2001:db8::53            # one resolver
            [2001:db8::54]
            2001:db8:1::/120, a /120
            2001:db8:2::1 - 2001:db8:2::10
            2001:db8::53            # again: merged
            2001:db8::zz
            2001:db8::/112
            """
        let r = SweepRanges(bytes: Array(text.utf8), source: "v6.txt")
        #expect(r.issues.map(\.line) == [7])
        #expect(r.refused.isEmpty)
        #expect(r.ipv4Total == 4)
        // 2001:db8::/112 holds ::53 and ::54.
        #expect(r.ipv6Total == 65_536 + 256 + 16)
        #expect(r.total == 4 + r.ipv6Total)
        #expect(!r.isIPv6(index: 3) && r.isIPv6(index: 4))
        #expect(r.address6(at: 4) == Self.v6("2001:db8::"))
        #expect(r.address6(at: r.total - 1) == Self.v6("2001:db8:2::10"))
        let indexes: [UInt64] = [4, 4 + 0x53, 4 + 65_536, 4 + 65_536 + 255, r.total - 1]
        for index in indexes {
            #expect(r.index6(of: r.address6(at: index)) == index)
        }
        #expect(r.index6(of: Self.v6("2001:db8:3::1")) == nil)
        #expect(SweepRanges.describe6(Self.v6("2001:db8::53")) == "[2001:db8::53]")
        #expect(SweepRanges.address("[2001:db8::53]") == IPAddress("2001:db8::53"))
        #expect(SweepRanges.address("192.0.2.1") == IPAddress("192.0.2.1"))
    }

    /// More than 65,536 addresses in one IPv6 entry refuses the sweep, naming the line; /112 is the largest prefix taken.
    @Test(arguments: ["2001:db8::/111", "2001:db8::/64", "2001:db8::/32", "::/0", "2001:db8::1-2001:db8::1:1"])
    func exhaustiveIPv6IsRefused(entry: String) {
        let r = SweepRanges(bytes: Array("2001:db8:9::/112\n\n\(entry)\n".utf8), source: "big.txt")
        #expect(r.refused.map(\.line) == [3])
        let line = r.refused.first?.description ?? ""
        #expect(line.hasPrefix("big.txt:3: ") && line.contains("cap of 65536") && line.contains("exhaustive IPv6 sweep"), "\(line)")
        #expect(!line.contains("\n"))
        #expect(r.ipv6Total == 65_536)
    }

    @Test func theIPv6TotalIsCapped() {
        let lines = (0...256).map { "2001:db8:\(String($0, radix: 16))::/112" }.joined(separator: "\n")
        let r = SweepRanges(bytes: Array(lines.utf8), source: "many.txt")
        #expect(r.refused.map(\.line) == [257])
        let load = SweepRanges.load(bytes: Array(lines.utf8), source: "many.txt", sha256: "x", countries: [])
        #expect(load.refused.map(\.line) == [257])
        #expect(load.blocks6.count == 256, "\(load.blocks6.count) \(load.blocks6.prefix(3))")
    }

    @Test func theDigestCoversTheIPv6Blocks() {
        let v4 = SweepRanges(blocks: [.init(first: 1, count: 2)])
        let a = SweepRanges(blocks: [.init(first: 1, count: 2)], blocks6: [.init(first: Self.v6("2001:db8::"), count: 4)])
        let b = SweepRanges(blocks: [.init(first: 1, count: 2)], blocks6: [.init(first: Self.v6("2001:db8::"), count: 5)])
        #expect(Set([SweepJournal.digest(v4), SweepJournal.digest(a), SweepJournal.digest(b)]).count == 3)
    }

    /// An IPv6 probe names its target by its index among the IPv6 addresses, under a salt of its own.
    @Test func ipv6AnswersAreMatchedByTheirOwnName() throws {
        let key = try ProbeKey(bytes: Array(repeating: 3, count: 32))
        let ranges = SweepRanges(blocks: [.init(first: SweepRanges.parseIPv4("198.19.0.0")!, count: 8)],
                                 blocks6: [.init(first: Self.v6("2001:db8:19::"), count: 256)])
        let prober = Prober(engine: QueryEngine(seed: 1), key: key)
        let sweep = SweepProbe(prober: prober, zone: try DNSName("vpn.sim.test"), salt: 7, ranges: ranges)
        let index = ranges.index6(of: Self.v6("2001:db8:19::35"))!
        var slot = [UInt8](repeating: 0, count: 512)
        let length = try #require(slot.withUnsafeMutableBytes { sweep.write(forIPv6Index: index, millis: 100, id: 9, into: $0) })
        var message = try DNSMessage(parsing: Array(slot[..<length]))
        message.header.isResponse = true
        message.edns = nil
        let response = try message.serialized()
        let source = try #require(IPAddress("2001:db8:19::35"))
        let answer = try #require(sweep.match(response, source: source, millis: 130))
        #expect(answer.address == "[2001:db8:19::35]" && answer.from == nil)
        #expect(answer.ip == source)
        let elsewhere = try #require(sweep.match(response, source: IPAddress("2001:db8::1")!, millis: 130))
        #expect(elsewhere.from == "[2001:db8::1]")
        // Another run's salt, or a sweep whose IPv6 list is shorter, does not take it.
        let otherSalt = SweepProbe(prober: prober, zone: try DNSName("vpn.sim.test"), salt: 7 ^ 0x8000, ranges: ranges)
        #expect(otherSalt.match(response, source: source, millis: 130)?.ip != source)
        let short = SweepProbe(prober: prober, zone: try DNSName("vpn.sim.test"), salt: 7,
                               ranges: SweepRanges(blocks: [], blocks6: [.init(first: Self.v6("2001:db8:19::"), count: 16)]))
        #expect(short.match(response, source: source, millis: 130) == nil)
    }

    @Test func shardsMergeIPv6Addresses() throws {
        let parts = [
            SweepShardMerge.Part(source: "a", vantage: nil, seed: 1, shard: SweepShard(index: 0, count: 2), rangesDigest: "d",
                                 complete: true, answering: ["[2001:db8::53]", "192.0.2.9"]),
            SweepShardMerge.Part(source: "b", vantage: nil, seed: 1, shard: SweepShard(index: 1, count: 2), rangesDigest: "d",
                                 complete: true, answering: ["192.0.2.1", "[2001:db8::5]"]),
        ]
        #expect(try SweepShardMerge.merge(parts).answering == ["192.0.2.1", "192.0.2.9", "[2001:db8::5]", "[2001:db8::53]"])
    }
}
