import Base
import DNSWire
import Foundation
import Glibc
import ProbeClient
import ProbeProtocol
import Results
import Synchronization
import Testing

/// Issue 31's pieces that need no lab: the RIR delegated parser and --country, the shard partition,
/// the inverse walk neighbours use, and the pass bookkeeping (a sweep over loopback).
@Suite struct SweepDiscoveryTests {
    static let delegated = """
        2.3|ripencc|20261126|8|19830705|20261125|+0100
        # a comment
        ripencc|*|ipv4|*|5|summary
        ripencc|*|ipv6|*|1|summary
        ripencc|*|asn|*|1|summary
        ripencc|IR|ipv4|198.19.0.0|768|20100101|allocated|abc
        ripencc|IR|ipv4|198.19.3.0|256|20100101|assigned
        ripencc|TR|ipv4|198.19.4.0|1024|20110101|allocated
        ripencc|DE|ipv4|198.19.8.0|2048|20120101|allocated
        ripencc|IR|ipv6|2001:db8::|32|20100101|allocated
        ripencc|IR|asn|64512|1|20100101|allocated
        ripencc||ipv4|198.19.16.0|256||available
        ripencc|IR|ipv4|198.19.20.0|0|20100101|allocated
        ripencc|IR|ipv4|198.19.20.0|256|2010|allocated
        ripencc|IR|ipv4|198.19.300.0|256|20100101|allocated
        ripencc|IR|ipvx|198.19.20.0|256|20100101|allocated
        ripencc|IR|ipv4|198.19.20.0|256|20100101|sold
        ripencc|IRN|ipv4|198.19.20.0|256|20100101|allocated
        ripencc|IR|ipv4|198.19.20.0
        ripencc|IR|ipv4|255.255.255.0|257|20100101|allocated
        """

    @Test func delegatedFileTakesOnlyTheChosenCountries() {
        let load = SweepRanges.load(bytes: Array(Self.delegated.utf8), source: "delegated-ripencc-extended-latest",
                                    sha256: "00", countries: ["IR", "TR"])
        #expect(load.file.format == .delegated)
        let ranges = SweepRanges(blocks: load.blocks)
        #expect(ranges.total == 768 + 256 + 1024)
        #expect(ranges.contains(SweepRanges.parseIPv4("198.19.7.255")!))
        #expect(!ranges.contains(SweepRanges.parseIPv4("198.19.8.0")!))
        // 768 addresses from 198.19.0.0 are a /23 and a /24.
        #expect(load.file.countries?["IR"] == ["198.19.0.0/23", "198.19.2.0/24", "198.19.3.0/24"])
        #expect(load.file.countries?["TR"] == ["198.19.4.0/22"])
        #expect(load.file.otherCountryRecords == 2)
        #expect(load.file.nonIPv4Records == 2)
        #expect(load.issues.map(\.line) == [13, 14, 15, 16, 17, 18, 19, 20])
        #expect(load.issues.allSatisfy { $0.description.hasPrefix("delegated-ripencc-extended-latest:") })
        #expect(load.issues[0].reason.contains("address count"))
        #expect(load.issues[1].reason.contains("YYYYMMDD"))
        #expect(load.issues[3].reason.contains("ipv4, ipv6, asn"))
        #expect(load.issues[6].reason.contains("7 fields"))
    }

    @Test func ipdenyZoneFileIsAList() {
        let zone = "198.19.0.0/22\r\n198.19.8.0/24\r\n"
        let load = SweepRanges.load(bytes: Array(zone.utf8), source: "ir.zone", sha256: "00", countries: [])
        #expect(load.file.format == .list)
        #expect(SweepRanges(blocks: load.blocks).total == 1024 + 256)
        #expect(load.issues.isEmpty)
    }

    @Test(arguments: [(0, 1), (0, 768), (5, 3), (256, 1000), (0xFFFF_FF00, 256), (0, 1 << 32), (7, 4_000_000)] as [(UInt32, UInt64)])
    func cidrsCoverABlockExactly(first: UInt32, count: UInt64) {
        let cidrs = SweepRanges.cidrs(of: .init(first: first, count: count))
        var next = UInt64(first)
        for c in cidrs {
            let size = UInt64(1) << UInt64(32 - c.length)
            #expect(UInt64(c.first) == next)
            #expect(UInt64(c.first) % size == 0, "\(c) is not aligned")
            next += size
        }
        #expect(next == UInt64(first) + count)
        // The fewest: no two neighbours could be one block.
        #expect(cidrs.count <= 64)
    }

    /// N shards of one seed walk disjoint parts whose union is every value once.
    @Test(arguments: [(1, 1), (70_001, 4), (4096, 3), (5, 7), (65_536, 4)] as [(UInt64, UInt64)])
    func shardsPartitionThePermutation(count: UInt64, shards: UInt64) {
        let p = SweepPermutation(count: count, seed: 31)
        var owner = [Int](repeating: -1, count: Int(count))
        for i in 0..<shards {
            let shard = SweepShard(index: i, count: shards)
            var position = shard.align(0)
            while position < p.domain {
                #expect(shard.contains(position: position))
                if let v = p.value(at: position) {
                    #expect(owner[Int(v)] == -1, "value \(v) in two shards")
                    owner[Int(v)] = Int(i)
                }
                position += shards
            }
        }
        #expect(!owner.contains(-1))
    }

    @Test func shardSyntaxAndAlignment() {
        #expect(SweepShard("2/4") == SweepShard(index: 2, count: 4))
        for bad in ["4/4", "1", "a/4", "1/0", "-1/4", "1/4/2", "0/70000"] { #expect(SweepShard(bad) == nil, "\(bad)") }
        let s = SweepShard(index: 2, count: 4)
        #expect(s.align(0) == 2 && s.align(2) == 2 && s.align(3) == 6 && s.align(7) == 10)
    }

    /// Neighbours find a prefix's walk positions through the inverse permutation.
    @Test func inverseWalkAndIndex() {
        let p = SweepPermutation(count: 70_001, seed: 8)
        for position in stride(from: UInt64(0), to: p.domain, by: 97) {
            if let v = p.value(at: position) { #expect(p.position(of: v) == position) }
        }
        let r = SweepRanges(blocks: [.init(first: 100, count: 10), .init(first: 1000, count: 5)])
        for i in 0..<r.total { #expect(r.index(of: r.address(at: i)) == i) }
        #expect(r.index(of: 99) == nil && r.index(of: 110) == nil && r.index(of: 1005) == nil)
    }

    /// A sweep without MTU scans over `configuration`, journalled in `dir`.
    static func sweepOnly(_ configuration: SweepConfiguration, key: ProbeKey, zone: DNSName, salt: UInt16,
                          dir: String) throws -> (SweepScan, SweepJournal) {
        let prober = Prober(engine: QueryEngine(seed: 1), key: key)
        let sweeper = try Sweeper(configuration: configuration, probe: SweepProbe(prober: prober, zone: zone, salt: salt))
        let journal = try SweepJournal(directory: dir)
        let scanner = Scanner(configuration: ScanConfiguration(resolvers: [], domains: [zone]), prober: prober)
        return (SweepScan(sweeper: sweeper, scanner: scanner, journal: journal, measures: false), journal)
    }

    /// Three passes over 64 loopback addresses against a responder that drops the first probe to
    /// each address and stays silent for a quarter of them: every other address is found in pass 2,
    /// each pass probes only what has not answered, and no address gets two probes in one pass
    /// (the responder counts them).
    @Test(.timeLimit(.minutes(1)))
    func passesProbeAgainOnlyWhatDidNotAnswer() async throws {
        let key = try ProbeKey(bytes: Array(repeating: 5, count: 32))
        let zone = try DNSName("vpn.sim.test")
        let responder = try LoopbackResponder(key: key, zone: zone) { address, seen in
            address & 3 != 0 && seen >= 2
        }
        defer { responder.stop() }
        let dir = "/tmp/tp-sweep-passes-\(UInt64.random(in: 0...UInt64.max))"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = SweepRanges.parseIPv4("127.31.0.0")!
        let ranges = SweepRanges(blocks: [.init(first: first, count: 64)])
        var configuration = SweepConfiguration(ranges: ranges, seed: 3, rate: 5000, timeout: 0.3)
        configuration.port = responder.port
        let (scan, journal) = try Self.sweepOnly(configuration, key: key, zone: zone, salt: 11, dir: dir)
        defer { journal.close() }
        var state = SweepJournal.State(seed: 3, salt: 11, rangesDigest: SweepJournal.digest(ranges), rangesTotal: 64,
                                       sample: nil, checkpoint: SweepCheckpoint(), runs: 1)
        state.passes = 3
        state.pass = 1
        let result = await scan.run(state: state, resumed: false)
        #expect(result.complete)
        #expect(result.state.passSent == [64, 64, 16])
        let counts = responder.counts
        for offset in UInt32(0)..<64 {
            let answers = offset & 3 != 0
            #expect(counts[first + offset] == (answers ? 2 : 3), "\(offset)")
        }
        #expect(result.answers.count == 48)
        #expect(result.answers.allSatisfy { $0.pass == 2 })
    }
}

extension SweepDiscoveryTests {
    /// The send path's template writes the same bytes as building the query from scratch.
    @Test func templateQueryIsTheBuiltQuery() throws {
        let key = try ProbeKey(bytes: Array(repeating: 7, count: 32))
        for zoneText in ["vpn.sim.test", "t.example.com"] {
            let probe = SweepProbe(prober: Prober(engine: QueryEngine(seed: 1), key: key), zone: try DNSName(zoneText), salt: 99)
            var rng = SplitMix64(seed: 5)
            var slot = [UInt8](repeating: 0, count: 512)
            for _ in 0..<200 {
                let address = UInt32(truncatingIfNeeded: rng.next())
                let millis = UInt16(truncatingIfNeeded: rng.next())
                let id = UInt16(truncatingIfNeeded: rng.next())
                let built = try #require(probe.query(for: address, millis: millis, id: id))
                let length = try #require(slot.withUnsafeMutableBytes { probe.write(for: address, millis: millis, id: id, into: $0) })
                #expect(Array(slot[0..<length]) == built)
            }
        }
    }

    /// --expand-neighbours /24 with a sample of 64 of a /20 where two /24s answer in full: the
    /// sampled addresses that answer pull in the rest of their /24 at once, so all 512 are found,
    /// most of them as neighbours beyond the sample, and no address gets two probes.
    @Test(.timeLimit(.minutes(1)))
    func neighboursOfAnsweringAddressesAreSweptFirst() async throws {
        let key = try ProbeKey(bytes: Array(repeating: 6, count: 32))
        let zone = try DNSName("vpn.sim.test")
        let first = SweepRanges.parseIPv4("127.32.0.0")!
        let responder = try LoopbackResponder(key: key, zone: zone) { address, _ in
            let third = address >> 8 & 0xFF
            return third == 5 || third == 9
        }
        defer { responder.stop() }
        let dir = "/tmp/tp-sweep-neighbours-\(UInt64.random(in: 0...UInt64.max))"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let ranges = SweepRanges(blocks: [.init(first: first, count: 4096)])
        var configuration = SweepConfiguration(ranges: ranges, seed: 12, rate: 5000, sample: 64, timeout: 2)  // counts, not time: a loaded machine answers late
        configuration.port = responder.port
        configuration.neighbourPrefix = 24
        let (scan, journal) = try Self.sweepOnly(configuration, key: key, zone: zone, salt: 12, dir: dir)
        defer { journal.close() }
        let state = SweepJournal.State(seed: 12, salt: 12, rangesDigest: SweepJournal.digest(ranges), rangesTotal: 4096,
                                       sample: 64, checkpoint: SweepCheckpoint(), runs: 1)
        let result = await scan.run(state: state, resumed: false)
        #expect(result.complete)
        let sampled = (0..<result.state.firstPassEnd!).compactMap { configuration.permutation.value(at: $0) }
            .map { ranges.address(at: $0) }
        #expect(sampled.count == 64)
        let hits = sampled.filter { $0 >> 8 & 0xFF == 5 || $0 >> 8 & 0xFF == 9 }
        #expect(!hits.isEmpty)
        #expect(result.answers.count == 512)
        // Sampled addresses of an answering /24 walked before its expansion were not sent again;
        // the ones after it were skipped by the walk.
        #expect(result.stats.neighbourProbes >= UInt64(512 - hits.count) && result.stats.neighbourProbes < 512)
        #expect(result.answers.filter { $0.viaNeighbour == true }.count == Int(result.stats.neighbourProbes))
        #expect(responder.counts.values.allSatisfy { $0 == 1 }, "an address got two probes")
        #expect(responder.counts.count == 64 - hits.count + 512)
    }
}

enum ResponderFailure: Error {
    case socket
    case bind
}

/// A UDP responder on 0.0.0.0 (loopback traffic only: the sweep's targets are 127.31.0.0/26) that
/// answers a sweep probe by echoing it as a response when `answers(target, probesSoFar)` says so,
/// and counts the probes each target received.
final class LoopbackResponder: Sendable {
    let port: UInt16
    private let fd: Int32
    private let table = Mutex<[UInt32: Int]>([:])
    private let stopFlag = Atomic<Bool>(false)
    private let done = Atomic<Bool>(false)

    init(key: ProbeKey, zone: DNSName, answers: @escaping @Sendable (UInt32, Int) -> Bool) throws {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw ResponderFailure.socket }
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard bound == 0 else {
            close(fd)
            throw ResponderFailure.bind
        }
        var tv = timeval(tv_sec: 0, tv_usec: 50_000)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        // 16 MiB (forced as root): on a loaded machine this thread is starved for whole seconds, and
        // the default buffer (about 300 probes) lost up to 460 of 4,096 probes in `make check`.
        var bytes: Int32 = 16 << 20
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, socklen_t(MemoryLayout<Int32>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, socklen_t(MemoryLayout<Int32>.size))
        self.fd = fd
        port = UInt16(bigEndian: local.sin_port)
        let thread = Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: 4096)
            while !stopFlag.load(ordering: .relaxed) {
                var from = sockaddr_in()
                var fromLength = socklen_t(MemoryLayout<sockaddr_in>.size)
                let n = buffer.withUnsafeMutableBytes { raw in
                    withUnsafeMutablePointer(to: &from) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, raw.baseAddress, raw.count, 0, $0, &fromLength) }
                    }
                }
                guard n > 12 else { continue }
                var query = Array(buffer[0..<n])
                guard let message = try? DNSMessage(parsing: query), message.questions.count == 1,
                      let received = try? ProbeName.read(message.questions[0].name, zone: zone, key: key),
                      received.meta.nonce.count == 8 else { continue }
                let nonce = received.meta.nonce
                let target = UInt32(nonce[4]) << 24 | UInt32(nonce[5]) << 16 | UInt32(nonce[6]) << 8 | UInt32(nonce[7])
                let seen = table.withLock { t in
                    t[target, default: 0] += 1
                    return t[target]!
                }
                guard answers(target, seen) else { continue }
                query[2] |= 0x80
                _ = query.withUnsafeBytes { raw in
                    withUnsafePointer(to: &from) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, raw.baseAddress, raw.count, 0, $0, fromLength) }
                    }
                }
            }
            done.store(true, ordering: .releasing)
        }
        thread.start()
    }

    var counts: [UInt32: Int] { table.withLock { $0 } }

    func stop() {
        stopFlag.store(true, ordering: .relaxed)
        while !done.load(ordering: .acquiring) { usleep(10_000) }
        close(fd)
    }
}
