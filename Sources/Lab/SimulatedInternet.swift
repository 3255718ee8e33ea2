import Base
import OSLayer
public import DNSWire
import Foundation
public import ProbeProtocol
import ProbeServer
import Synchronization

/// A simulated internet for sweeps: one network namespace in which every address of
/// 198.19.0.0/16 is local (`ip route add local 198.19.0.0/16 dev lo`) and one UDP socket on port 53
/// answers for all of them. IP_PKTINFO gives the destination of each query, and the answer leaves
/// from that same address, so to a scanner inside the namespace each of the 65,536 addresses is a
/// host of its own, behaving as a seeded mix says: silent (most), an honest resolver with a UDP
/// limit, a hijacker, a lossy one, a rate-limited one, a slow one. The truth (every address that is
/// not silent, with its behaviour) is a file the tests compare against.
///
/// Address plan: the lab (`lab up`) uses 198.18.0.0/16; `verify` sandboxes take /30s of
/// 198.19.0.0/16 inside namespaces of their own. This namespace has no link to any other (only
/// `lo`), so its /16 reaches nothing outside it and nothing outside reaches it.
public enum SimulatedInternet {
    public static let network: UInt32 = 0xC613_0000  // 198.19.0.0
    public static let prefix = "198.19.0.0/16"
    public static let size: UInt32 = 65_536
    /// The IPv6 hosts (explicit IPv6 lists, issue #29): every address of 2001:db8:19::/112 (RFC 3849
    /// documentation space) is local too, answered by an IPv6 socket with the same mix. The scanner
    /// inside the namespace sends from `client6`, an address of `lo` outside the /112.
    public static let network6: UInt128 = 0x2001_0db8_0019_0000 << 64
    public static let prefix6 = "2001:db8:19::/112"
    public static let client6 = "2001:db8:19:1::1"

    /// The key the mix decides an IPv6 host's behaviour by: its offset in the /112 under 32.1.0.0/16,
    /// apart from every key of the IPv4 /16.
    public static func key6(offset: UInt32) -> UInt32 { 0x2001_0000 | offset & 0xFFFF }

    public enum Behaviour: String, Codable, Sendable, CaseIterable {
        case silent
        /// Answers every query as the probe responder would through an honest resolver; answers
        /// above its UDP limit come back with TC (header and question only), as a resolver's
        /// max-udp-size makes them.
        case honest
        /// Answers every TXT question with a record of its own (NOERROR, not the responder's).
        case hijacker
        /// Honest, but drops each query with probability `lossRate`.
        case lossy
        /// Honest up to `rateLimit` queries per second (a token bucket of that depth); the rest dropped.
        case rateLimited
        /// Honest, each answer `slowMs` late.
        case slow
    }

    /// The seeded mix: fractions of all addresses for each behaviour that answers.
    public struct Mix: Codable, Sendable, Hashable {
        public var honest = 0.012
        public var hijacker = 0.002
        public var lossy = 0.002
        public var rateLimited = 0.002
        public var slow = 0.002
        public var lossRate = 0.3
        public var rateLimit = 20.0
        public var slowMs = 300
        /// UDP limits the honest-type resolvers draw from (512: no EDNS, 1232: DNS Flag Day 2020).
        public var udpLimits = [512, 1232, 1452, 4096]

        public init() {}
        public var answering: Double { honest + hijacker + lossy + rateLimited + slow }
    }

    public struct Host: Codable, Sendable, Hashable {
        public var address: String
        public var behaviour: Behaviour
        public var udpLimit: Int?
    }

    /// Everything about the simulated /16 a test needs to judge a sweep.
    public struct Truth: Codable, Sendable, Hashable {
        public var seed: UInt64
        public var prefix: String
        public var addresses: Int
        public var domain: String
        public var mix: Mix
        /// Every address that is not silent, in address order.
        public var hosts: [Host]
        /// The IPv6 /112 and its hosts that are not silent (addresses as `[2001:db8:19::35]`).
        public var prefix6: String?
        public var hosts6: [Host]?
    }

    /// The behaviour of `address` (its offset in the /16 decides, with the seed): the same for every run.
    public static func behaviour(of address: UInt32, seed: UInt64, mix: Mix) -> (Behaviour, udpLimit: Int) {
        var rng = SplitMix64(seed: seed ^ (UInt64(address) &* 0x9E37_79B9_7F4A_7C15))
        let u = rng.unitInterval()
        let limit = mix.udpLimits.isEmpty ? 4096 : mix.udpLimits[Int(rng.next() % UInt64(mix.udpLimits.count))]
        var edge = mix.honest
        if u < edge { return (.honest, limit) }
        edge += mix.hijacker
        if u < edge { return (.hijacker, limit) }
        edge += mix.lossy
        if u < edge { return (.lossy, limit) }
        edge += mix.rateLimited
        if u < edge { return (.rateLimited, limit) }
        edge += mix.slow
        if u < edge { return (.slow, limit) }
        return (.silent, limit)
    }

    public static func truth(seed: UInt64, mix: Mix, domain: String) -> Truth {
        var hosts: [Host] = []
        for offset in 0..<size {
            let address = network | offset
            let (b, limit) = behaviour(of: address, seed: seed, mix: mix)
            guard b != .silent else { continue }
            hosts.append(Host(address: describe(address), behaviour: b, udpLimit: b == .hijacker ? nil : limit))
        }
        var hosts6: [Host] = []
        for offset in 0..<size {
            let (b, limit) = behaviour(of: key6(offset: offset), seed: seed, mix: mix)
            guard b != .silent else { continue }
            hosts6.append(Host(address: describe6(offset: offset), behaviour: b, udpLimit: b == .hijacker ? nil : limit))
        }
        return Truth(seed: seed, prefix: prefix, addresses: Int(size), domain: domain, mix: mix, hosts: hosts,
                     prefix6: prefix6, hosts6: hosts6)
    }

    /// The IPv6 host at `offset` of the /112, in the sweep's resolver form `[2001:db8:19::35]`.
    public static func describe6(offset: UInt32) -> String {
        let a = network6 | UInt128(offset & 0xFFFF)
        return "[\(IPAddress.v6(UInt64(truncatingIfNeeded: a >> 64), UInt64(truncatingIfNeeded: a)))]"
    }

    /// The offset in the /112 of an IPv6 `address`; nil outside it.
    static func offset6(_ address: IPAddress) -> UInt32? {
        guard case .v6(let hi, let lo) = address else { return nil }
        let a = UInt128(hi) << 64 | UInt128(lo)
        guard a >> 16 == network6 >> 16 else { return nil }
        return UInt32(truncatingIfNeeded: a & 0xFFFF)
    }

    static func describe(_ a: UInt32) -> String { "\(a >> 24).\(a >> 16 & 0xFF).\(a >> 8 & 0xFF).\(a & 0xFF)" }
}

/// The responder of the simulated internet: one socket, one thread, inside the namespace.
public final class SimulatedResponder: Sendable {
    public let seed: UInt64
    public let mix: SimulatedInternet.Mix
    private let responder: ProbeResponder
    private let stopFlag = Atomic<Bool>(false)
    private let counts = Mutex<[String: Int]>([:])
    private let sweepProbes = Mutex<[UInt32: UInt16]>([:])
    /// Sweep probes per IPv6 host (by offset in the /112).
    private let sweepProbes6 = Mutex<[UInt32: UInt16]>([:])
    private let zone: DNSName
    private let key: ProbeKey

    public init(seed: UInt64, mix: SimulatedInternet.Mix, zone: DNSName, key: ProbeKey) {
        self.seed = seed
        self.mix = mix
        self.zone = zone
        self.key = key
        responder = ProbeResponder(configuration: ProbeResponder.Configuration(zone: zone, key: key))
    }

    /// What the sweep sent, as the simulated hosts saw it: sweep probes (echo probes whose
    /// authenticated nonce ends with the address they were sent to, `SweepProbe`) per address.
    public struct ProbeCounts: Codable, Sendable, Hashable {
        public var sweepProbes: Int
        public var addressesProbed: Int
        /// Addresses that received more than one sweep probe, with how many.
        public var probedTwice: [String: Int]
        public var queriesByBehaviour: [String: Int]
        /// Every address that received a sweep probe, as merged inclusive ranges `a-b` in address
        /// order (so a test can check which addresses a sweep reached, not only how many).
        public var probedRanges: [String]?
        /// Sweep probes per address, by count: how many addresses got 1, 2, ... probes.
        public var addressesByProbeCount: [String: Int]?
        /// The same for the IPv6 /112. An IPv6 probe names its target by its index in the sweep's
        /// IPv6 list, so a host counts it as its own when that index is its offset in the /112:
        /// exact for a list whose IPv6 part is one block starting at 2001:db8:19::.
        public var sweepProbes6: Int?
        public var addressesProbed6: Int?
        public var probedTwice6: [String: Int]?
    }

    public var probeCounts: ProbeCounts {
        let table = sweepProbes.withLock { $0 }
        var twice: [String: Int] = [:]
        for (a, n) in table where n > 1 { twice[SimulatedInternet.describe(a)] = Int(n) }
        var ranges: [String] = []
        var run: (first: UInt32, last: UInt32)?
        for a in table.keys.sorted() {
            if let r = run, r.last &+ 1 == a, a != 0 {
                run = (r.first, a)
                continue
            }
            if let r = run { ranges.append("\(SimulatedInternet.describe(r.first))-\(SimulatedInternet.describe(r.last))") }
            run = (a, a)
        }
        if let r = run { ranges.append("\(SimulatedInternet.describe(r.first))-\(SimulatedInternet.describe(r.last))") }
        var byCount: [String: Int] = [:]
        for n in table.values { byCount[String(n), default: 0] += 1 }
        var counts = ProbeCounts(sweepProbes: table.values.reduce(0) { $0 + Int($1) }, addressesProbed: table.count,
                                 probedTwice: twice, queriesByBehaviour: received, probedRanges: ranges, addressesByProbeCount: byCount)
        let table6 = sweepProbes6.withLock { $0 }
        counts.sweepProbes6 = table6.values.reduce(0) { $0 + Int($1) }
        counts.addressesProbed6 = table6.count
        counts.probedTwice6 = Dictionary(uniqueKeysWithValues: table6.filter { $0.value > 1 }.map { (SimulatedInternet.describe6(offset: $0.key), Int($0.value)) })
        return counts
    }

    /// Counts `query` when it is a sweep probe for `destination` (an IPv6 one: for the host at
    /// offset `destination` of the /112).
    private func countSweepProbe(_ query: [UInt8], destination: UInt32, ipv6: Bool = false) {
        guard let message = try? DNSMessage(parsing: query), message.questions.count == 1,
              let received = try? ProbeName.read(message.questions[0].name, zone: zone, key: key),
              received.meta.kind == .echo, received.meta.nonce.count == 8 else { return }
        let n = received.meta.nonce
        let target = UInt32(n[4]) << 24 | UInt32(n[5]) << 16 | UInt32(n[6]) << 8 | UInt32(n[7])
        guard target == destination else { return }
        if ipv6 {
            sweepProbes6.withLock { $0[target, default: 0] &+= 1 }
        } else {
            sweepProbes.withLock { $0[target, default: 0] &+= 1 }
        }
    }

    public func stop() { stopFlag.store(true, ordering: .relaxed) }

    /// Queries received per behaviour.
    public var received: [String: Int] { counts.withLock { $0 } }

    /// Binds 0.0.0.0:53 with IP_PKTINFO and [::]:53 with IPV6_PKTINFO in the calling thread's
    /// namespace and answers until `stop()`. Returns an error line when a socket cannot be set up.
    public func serve(ready: @Sendable () -> Void) -> String? {
        // IP_PKTINFO: each datagram carries its destination address, and each answer leaves from it.
        let socket: PacketInfoSocket
        let socket6: PacketInfoSocket
        do {
            socket = try PacketInfoSocket.bind(port: 53, bufferBytes: 64 << 20)
        } catch {
            return error.description
        }
        defer { socket.close() }
        do {
            socket6 = try PacketInfoSocket.bind6(port: 53, bufferBytes: 64 << 20)
        } catch {
            return "IPv6: \(error.description)"
        }
        defer { socket6.close() }
        ready()

        var rng = SplitMix64(seed: seed ^ 0x4C4F_5353)
        var buckets: [UInt32: (tokens: Double, at: UInt64)] = [:]
        var delayed: [(due: UInt64, bytes: [UInt8], to: IPSocketAddress, from: IPAddress)] = []
        var delayedHead = 0
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var control = [UInt8](repeating: 0, count: 128)
        var tally: [String: Int] = [:]
        var lastTally = Self.now()
        func send(_ bytes: [UInt8], to: IPSocketAddress, from: IPAddress) {
            switch from {
            case .v4(let a): socket.send(bytes, to: to, from: a)
            case .v6: socket6.send6(bytes, to: to, from: from)
            }
        }
        // One query to the host whose mix key is `key` (its IPv4 address, or `key6` of its IPv6 offset).
        func answer(_ query: [UInt8], key: UInt32, from: IPSocketAddress, destination: IPAddress) {
            let (behaviour, limit) = SimulatedInternet.behaviour(of: key, seed: seed, mix: mix)
            tally[behaviour.rawValue, default: 0] += 1
            var answer: [UInt8]?
            switch behaviour {
            case .silent:
                return
            case .hijacker:
                answer = Self.hijack(query)
            case .honest, .slow:
                answer = honest(query, limit: limit)
            case .lossy:
                if rng.unitInterval() < mix.lossRate { return }
                answer = honest(query, limit: limit)
            case .rateLimited:
                let t = Self.now()
                var bucket = buckets[key] ?? (mix.rateLimit, t)
                bucket.tokens = min(mix.rateLimit, bucket.tokens + Double(t - bucket.at) / 1e9 * mix.rateLimit)
                bucket.at = t
                guard bucket.tokens >= 1 else {
                    buckets[key] = bucket
                    return
                }
                bucket.tokens -= 1
                buckets[key] = bucket
                answer = honest(query, limit: limit)
            }
            guard let answer else { return }
            if behaviour == .slow {
                delayed.append((Self.now() + UInt64(mix.slowMs) * 1_000_000, answer, from, destination))
            } else {
                send(answer, to: from, from: destination)
            }
        }
        while !stopFlag.load(ordering: .relaxed) {
            // Send the slow answers that are due.
            let now = Self.now()
            while delayedHead < delayed.count, delayed[delayedHead].due <= now {
                let d = delayed[delayedHead]
                send(d.bytes, to: d.to, from: d.from)
                delayedHead += 1
            }
            if delayedHead > 1024, delayedHead * 2 > delayed.count {
                delayed.removeFirst(delayedHead)
                delayedHead = 0
            }
            if now - lastTally > 200_000_000 {
                let snapshot = tally
                counts.withLock { $0 = snapshot }
                lastTally = now
            }
            let wait = delayedHead < delayed.count ? Int32(max(1, min(20, (delayed[delayedHead].due - now) / 1_000_000))) : 20
            let readable = PacketInfoSocket.waitReadable([socket, socket6], timeoutMs: wait)
            while readable[0] {
                guard let (count, from, arrivedAt) = socket.receive(into: &buffer, control: &control) else { break }
                guard let destination = arrivedAt else { continue }
                let query = Array(buffer[0..<count])
                countSweepProbe(query, destination: destination)
                answer(query, key: destination, from: from, destination: .v4(destination))
            }
            while readable[1] {
                guard let (count, from, arrivedAt) = socket6.receive6(into: &buffer, control: &control) else { break }
                guard let destination = arrivedAt, let offset = SimulatedInternet.offset6(destination) else { continue }
                let query = Array(buffer[0..<count])
                countSweepProbe(query, destination: offset, ipv6: true)
                answer(query, key: SimulatedInternet.key6(offset: offset), from: from, destination: destination)
            }
        }
        let snapshot = tally
        counts.withLock { $0 = snapshot }
        return nil
    }

    /// The responder's answer, cut to header and question with TC when above the UDP limit.
    func honest(_ query: [UInt8], limit: Int) -> [UInt8]? {
        guard let response = responder.respond(to: query).response else { return nil }
        guard response.count > limit else { return response }
        guard let parsed = try? DNSMessage(parsing: response) else { return nil }
        var header = parsed.header
        header.truncated = true
        return try? DNSMessage(header: header, questions: parsed.questions).serialized()
    }

    static func hijack(_ query: [UInt8]) -> [UInt8]? {
        guard let parsed = try? DNSMessage(parsing: query), let question = parsed.questions.first else { return nil }
        var header = parsed.header
        header.isResponse = true
        header.recursionAvailable = true
        let record = DNSResourceRecord(name: question.name, ttl: 60, rdata: .txt([Array("blocked by policy".utf8)]))
        return try? DNSMessage(header: header, questions: [question], answers: question.type == .txt ? [record] : []).serialized()
    }

    static func now() -> UInt64 { SystemCall.monotonicNanoseconds() }
}
