import DNSWire
import Foundation
import Logging
import NIOCore
import ProbeProtocol
import ProbeServer
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A stand-in tunnel server on loopback: answers every UDP datagram and every TCP message with the
/// same bytes, QR bit set, and records what it received and from where.
final class FakeUpstream: @unchecked Sendable {
    struct Received: Sendable {
        var bytes: [UInt8]
        var sourcePort: Int
        var overTCP: Bool
    }

    let udpFD: Int32
    let tcpFD: Int32
    let port: Int
    private let stopped = Atomic<Bool>(false)
    private let log = Mutex<[Received]>([])
    private var threads: [Thread] = []

    /// Both sockets on one port of 127.0.0.1; `tcp` false leaves the TCP port closed. The UDP port
    /// is the kernel's choice; when its TCP twin is taken (other tests of the machine), another.
    init(tcp: Bool = true) throws {
        var udp: Int32 = -1
        var stream: Int32 = -1
        var address = sockaddr_in()
        var attempt = 0
        while true {
            attempt += 1
            udp = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(udp, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(udp, $0, &length) } }
            guard tcp else { break }
            stream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var one: Int32 = 1
            setsockopt(stream, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(stream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            if bound == 0 { break }
            close(stream)
            close(udp)
            guard attempt < 16 else { throw POSIXError(.EADDRINUSE) }
        }
        var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(udp, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        if tcp {
            listen(stream, 16)
            setsockopt(stream, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }
        udpFD = udp
        tcpFD = stream
        port = Int(UInt16(bigEndian: address.sin_port))
        threads.append(Thread { [self] in serveUDP() })
        if tcp { threads.append(Thread { [self] in serveTCP() }) }
        for thread in threads { thread.start() }
    }

    var received: [Received] { log.withLock { $0 } }

    func stop() {
        stopped.store(true, ordering: .relaxed)
        usleep(250_000)
        close(udpFD)
        if tcpFD >= 0 { close(tcpFD) }
    }

    static func answer(_ query: [UInt8]) -> [UInt8] {
        var out = query
        if out.count > 2 { out[2] |= 0x80 }
        return out
    }

    private func serveUDP() {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while !stopped.load(ordering: .relaxed) {
            var from = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let n = buffer.withUnsafeMutableBytes { raw in
                withUnsafeMutablePointer(to: &from) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(udpFD, raw.baseAddress, raw.count, 0, $0, &length) } }
            }
            guard n > 0 else { continue }
            let bytes = Array(buffer[0..<n])
            log.withLock { $0.append(Received(bytes: bytes, sourcePort: Int(UInt16(bigEndian: from.sin_port)), overTCP: false)) }
            let reply = Self.answer(bytes)
            _ = reply.withUnsafeBytes { raw in
                withUnsafePointer(to: &from) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(udpFD, raw.baseAddress, raw.count, 0, $0, length) } }
            }
        }
    }

    private func serveTCP() {
        while !stopped.load(ordering: .relaxed) {
            let client = accept(tcpFD, nil, nil)
            guard client >= 0 else { continue }
            var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
            setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65_536)
            connection: while !stopped.load(ordering: .relaxed) {
                let n = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
                if n == 0 { break }
                if n < 0 { if errno == EAGAIN || errno == EINTR { continue } else { break } }
                pending += buffer[0..<n]
                while pending.count >= 2, pending.count >= 2 + (Int(pending[0]) << 8 | Int(pending[1])) {
                    let length = Int(pending[0]) << 8 | Int(pending[1])
                    let message = Array(pending[2..<(2 + length)])
                    pending.removeFirst(2 + length)
                    log.withLock { $0.append(Received(bytes: message, sourcePort: 0, overTCP: true)) }
                    let reply = Self.answer(message)
                    let framed = [UInt8(reply.count >> 8), UInt8(reply.count & 0xFF)] + reply
                    guard framed.withUnsafeBytes({ send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == framed.count else { break connection }
                }
            }
            close(client)
        }
    }
}

/// A UDP client socket on 127.0.0.1 with a short receive timeout.
struct UDPClient {
    let fd: Int32

    init() {
        fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    func exchange(_ bytes: [UInt8], port: Int) -> [UInt8]? {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = bytes.withUnsafeBytes { raw in
            withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, raw.baseAddress, raw.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        return n > 0 ? Array(buffer[0..<n]) : nil
    }

    var localPort: Int {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    func close() { _ = Glibc.close(fd) }
}

/// `serve --forward` on loopback in front of `FakeUpstream`: probes (and the apex SOA) answered,
/// everything else relayed byte for byte both ways, per client, over UDP and TCP.
@Suite(.serialized) struct ForwardingServerTests {
    func withRelay(limits: ForwardLimits = .standard, upstreamTCP: Bool = true,
                   _ body: (ForwardingServer, Int, FakeUpstream) async throws -> Void) async throws {
        let upstream = try FakeUpstream(tcp: upstreamTCP)
        let relay = ForwardingServer(responder: responder, upstream: try SocketAddress(ipAddress: "127.0.0.1", port: upstream.port),
                                     ratePerSourcePerSecond: 0, limits: limits, logger: Logger(label: "test"))
        let bound = try await relay.start(listen: [try SocketAddress(ipAddress: "127.0.0.1", port: 0)])
        let port = try #require(bound.first?.port)
        do { try await body(relay, port, upstream) } catch {
            await relay.stop()
            upstream.stop()
            throw error
        }
        await relay.stop()
        upstream.stop()
    }

    /// A tunnel-like query: long random labels under the zone, not a probe.
    static func tunnelQuery(_ seed: UInt8) throws -> [UInt8] {
        let label = (0..<60).map { i in UInt8(ascii: "a") + UInt8((Int(seed) * 7 + i * 13) % 26) }
        return try query(DNSName(labels: [label, label] + zone.labels), .null)
    }

    /// A probe name built with another key: it looks like a probe but its MAC does not verify.
    static func lookAlike() throws -> [UInt8] {
        let other = try ProbeKey(bytes: Array(100..<132))
        let meta = ProbeMeta(kind: .echo, encoding: .base32, nonce: [9, 9, 9, 9, 9, 9, 9, 9], totalCharacters: ProbeMeta.characterCount)
        return try query(ProbeName.build(meta: meta, zone: zone, key: other))
    }

    static func probe() throws -> [UInt8] {
        let meta = ProbeMeta(kind: .echo, encoding: .base32, nonce: [1, 2, 3, 4, 5, 6, 7, 8], totalCharacters: ProbeMeta.characterCount)
        return try query(ProbeName.build(meta: meta, zone: zone, key: key))
    }

    @Test(.timeLimit(.minutes(1))) func whatIsNotAProbeIsRelayedUnchangedBothWays() async throws {
        try await withRelay { relay, port, upstream in
            let client = UDPClient()
            defer { client.close() }
            let garbage: [UInt8] = [1, 2, 3, 4, 5]
            let queries = [try Self.tunnelQuery(1), try Self.lookAlike(), try query(zone, .ns), try query(zone, .a), garbage]
            for q in queries {
                let answer = try #require(client.exchange(q, port: port), "no answer to \(q.prefix(16))")
                #expect(answer == FakeUpstream.answer(q), "the upstream's answer must come back byte for byte")
            }
            let seen = upstream.received
            #expect(seen.map(\.bytes) == queries, "the upstream must get every query byte for byte, in order")
            // The upstream sees the relay's own socket, not the client's port.
            #expect(seen.allSatisfy { $0.sourcePort != client.localPort && !$0.overTCP })
            let stats = relay.statistics
            #expect(stats.forwardedUp == queries.count && stats.forwardedDown == queries.count)
            #expect(stats.flowsOpened == 1)
            #expect(stats.answered.isEmpty)
        }
    }

    @Test(.timeLimit(.minutes(1))) func authenticatedProbesAndTheApexSOAAreAnsweredHere() async throws {
        try await withRelay { relay, port, upstream in
            let client = UDPClient()
            defer { client.close() }
            let echo = try #require(client.exchange(try Self.probe(), port: port))
            let parsed = try DNSMessage(parsing: echo)
            #expect(parsed.header.isResponse && parsed.answers.count == 1)
            if case .txt = parsed.answers.first?.rdata {} else { Issue.record("the probe's answer is not the responder's TXT") }
            // Over UDP the SOA is larger than the query: TC, no records (no amplification); over TCP, whole.
            let truncated = try DNSMessage(parsing: try #require(client.exchange(try query(zone, .soa), port: port)))
            #expect(truncated.header.truncated && truncated.answers.isEmpty)
            let fd = TCPListenerTests.connectTCP(port)
            try #require(fd >= 0)
            defer { close(fd) }
            let framed = TCPListenerTests.framed(try query(zone, .soa))
            _ = framed.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
            let soa = try DNSMessage(parsing: try #require(TCPListenerTests.readFrame(fd)))
            if case .soa = soa.answers.first?.rdata {} else { Issue.record("the apex SOA was not answered by the responder") }
            #expect(upstream.received.isEmpty, "nothing the responder answers may reach the tunnel server")
            #expect(relay.statistics.answered[.echo] == 1 && relay.statistics.answered[.apex] == 2)
        }
    }

    @Test(.timeLimit(.minutes(1))) func eachClientGetsItsOwnAnswersAndFlowsAreBounded() async throws {
        try await withRelay(limits: ForwardLimits(maxFlows: 2, flowIdleTimeout: .milliseconds(300))) { relay, port, upstream in
            let clients = (0..<3).map { _ in UDPClient() }
            defer { for c in clients { c.close() } }
            // Same DNS id from every client: only the flow tells the answers apart.
            for (index, client) in clients.enumerated() {
                let q = try Self.tunnelQuery(UInt8(index + 10))
                #expect(client.exchange(q, port: port) == FakeUpstream.answer(q))
            }
            #expect(Set(upstream.received.map(\.sourcePort)).count == 3, "one upstream socket per client")
            var stats = relay.statistics
            #expect(stats.flowsOpened == 3 && stats.flowsEvicted == 1)
            try await Task.sleep(for: .milliseconds(900))
            stats = relay.statistics
            #expect(stats.flowsExpired == 2, "idle flows close: \(stats)")
            // A client whose flow was closed gets a new one and its answer.
            let q = try Self.tunnelQuery(30)
            #expect(clients[0].exchange(q, port: port) == FakeUpstream.answer(q))
        }
    }

    @Test(.timeLimit(.minutes(1))) func tcpAnswersProbesAndRelaysTheRestOnOneConnection() async throws {
        try await withRelay { relay, port, upstream in
            let fd = TCPListenerTests.connectTCP(port)
            try #require(fd >= 0)
            defer { close(fd) }
            let tunnel = try Self.tunnelQuery(2)
            let probe = try Self.probe()
            let lookAlike = try Self.lookAlike()
            let wire = TCPListenerTests.framed(tunnel) + TCPListenerTests.framed(probe) + TCPListenerTests.framed(lookAlike)
            #expect(wire.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) } == wire.count)
            var answers: [[UInt8]] = []
            for _ in 0..<3 { if let frame = TCPListenerTests.readFrame(fd) { answers.append(frame) } }
            #expect(answers.count == 3)
            #expect(answers.contains(FakeUpstream.answer(tunnel)))
            #expect(answers.contains(FakeUpstream.answer(lookAlike)))
            let probeAnswer = try #require(answers.first { (try? DNSMessage(parsing: $0))?.answers.isEmpty == false && $0 != FakeUpstream.answer(tunnel) })
            #expect((try DNSMessage(parsing: probeAnswer)).header.isResponse)
            #expect(upstream.received.map(\.bytes) == [tunnel, lookAlike])
            #expect(upstream.received.allSatisfy { $0.overTCP })
            #expect(relay.statistics.tcpForwardedUp == 2 && relay.statistics.tcpForwardedDown == 2)
        }
    }

    @Test(.timeLimit(.minutes(1))) func tcpWithoutAnUpstreamListenerClosesOnlyWhenSomethingMustBeRelayed() async throws {
        try await withRelay(upstreamTCP: false) { relay, port, _ in
            let probeOnly = TCPListenerTests.connectTCP(port)
            try #require(probeOnly >= 0)
            defer { close(probeOnly) }
            let framed = TCPListenerTests.framed(try Self.probe())
            _ = framed.withUnsafeBytes { send(probeOnly, $0.baseAddress, $0.count, 0) }
            #expect(TCPListenerTests.readFrame(probeOnly) != nil, "a probe over TCP is answered without the upstream")

            let relayed = TCPListenerTests.connectTCP(port)
            try #require(relayed >= 0)
            defer { close(relayed) }
            let tunnel = TCPListenerTests.framed(try Self.tunnelQuery(3))
            _ = tunnel.withUnsafeBytes { send(relayed, $0.baseAddress, $0.count, 0) }
            #expect(TCPListenerTests.closedByServer(relayed, within: 3), "no upstream: the client's connection ends, as it would talking to it directly")
            #expect(relay.statistics.tcpUpstreamFailures == 1)
        }
    }
}
