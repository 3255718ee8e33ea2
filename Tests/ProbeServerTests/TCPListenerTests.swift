import DNSWire
import Foundation
import Logging
import NIOCore
import ProbeClient
import ProbeProtocol
import ProbeServer
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// DNS over TCP beside UDP on every listen address (RFC 1035 4.2.2, RFC 7766), on loopback.
@Suite(.serialized) struct TCPListenerTests {
    func withServer(_ limits: TCPLimits, responder: ProbeResponder = responder,
                    _ body: (ProbeServer, Int) async throws -> Void) async throws {
        let server = ProbeServer(responder: responder, ratePerSourcePerSecond: 0, tcp: limits, logger: Logger(label: "test"))
        let bound = try await server.start(listen: [try SocketAddress(ipAddress: "127.0.0.1", port: 0)])
        let port = try #require(bound.first?.port)
        do { try await body(server, port) } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    /// A blocking TCP socket connected to 127.0.0.1:port, or -1.
    static func connectTCP(_ port: Int) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return -1 }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let ok = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard ok == 0 else { close(fd); return -1 }
        var timeout = timeval(tv_sec: 3, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    static func framed(_ message: [UInt8]) -> [UInt8] {
        [UInt8(message.count >> 8), UInt8(message.count & 0xFF)] + message
    }

    /// Reads one length-framed message, nil on close or timeout.
    static func readFrame(_ fd: Int32) -> [UInt8]? {
        func readExactly(_ n: Int) -> [UInt8]? {
            var out = [UInt8](repeating: 0, count: n)
            var got = 0
            while got < n {
                let r = out.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + got, n - got, 0) }
                guard r > 0 else { return nil }
                got += r
            }
            return out
        }
        guard let head = readExactly(2) else { return nil }
        return readExactly(Int(head[0]) << 8 | Int(head[1]))
    }

    /// True once the server has closed `fd` (recv sees end of stream) within `seconds`.
    static func closedByServer(_ fd: Int32, within seconds: Int) -> Bool {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, 0) == 0
    }

    static func downloadQuery(bytes: Int, edns: UInt16) throws -> [UInt8] {
        let meta = ProbeMeta.download(nonce: [1, 2, 3, 4, 5, 6, 7, 8], bytes: bytes, type: .txt, encoding: .base32,
                                      totalCharacters: ProbeMeta.characterCount)
        return try query(ProbeName.build(meta: meta, zone: zone, key: key), .txt, edns: edns)
    }

    /// Three queries in one write are all answered on the connection (RFC 7766 6.2.1.1), and a
    /// download that UDP truncates at the asker's 1232 bytes comes whole over TCP.
    @Test(.timeLimit(.minutes(1))) func pipelinedQueriesAreAnsweredAndTCPCarriesWhatUDPTruncates() async throws {
        try await withServer(.standard) { server, port in
            let big = try Self.downloadQuery(bytes: 3000, edns: 1232)
            let udp = responder.respond(to: big)
            #expect(try DNSMessage(parsing: #require(udp.response)).header.truncated)
            var queries = [try query(zone, .soa), big, try query(DNSName("example.org"))]
            for i in queries.indices { queries[i][0] = 0x70; queries[i][1] = UInt8(i) }
            let fd = Self.connectTCP(port)
            #expect(fd >= 0)
            defer { close(fd) }
            let wire = queries.flatMap(Self.framed)
            #expect(wire.withUnsafeBytes { send(fd, $0.baseAddress, wire.count, 0) } == wire.count)
            var answers: [UInt8: DNSMessage] = [:]
            for _ in queries {
                let frame = try #require(Self.readFrame(fd))
                let message = try DNSMessage(parsing: frame)
                answers[frame[1]] = message
            }
            #expect(answers[0]?.answers.first?.type == .soa)
            let download = try #require(answers[1])
            #expect(!download.header.truncated)
            let payload = try DownloadLayout.extract(answers: download.answers, type: .txt, owner: download.questions[0].name,
                                                     zone: zone, expected: 3000)
            #expect(payload.count == 3000)
            #expect(answers[2]?.rcode == .refused)
            #expect(server.statistics.tcpQueries == 3)
        }
    }

    /// Over UDP nothing but an authenticated probe gets more bytes back than it sent: the apex SOA
    /// (larger than its query) goes out as TC no larger than the query, and whole over TCP.
    @Test func unauthenticatedAnswersNeverAmplifyOverUDP() throws {
        for edns: UInt16? in [nil, 1232, 4096] {
            let q = try query(zone, .soa, edns: edns)
            let udp = try #require(responder.respond(to: q, source: [], transport: .udp).response)
            #expect(udp.count <= q.count)
            #expect(try DNSMessage(parsing: udp).header.truncated)
            let tcp = try DNSMessage(parsing: #require(responder.respond(to: q, source: [], transport: .tcp).response))
            #expect(tcp.answers.first?.type == .soa && !tcp.header.truncated)
        }
    }

    /// A connection with no query for the idle timeout is closed, and so is one whose query stops
    /// half-way for the read timeout (RFC 7766 6.2.3).
    @Test(.timeLimit(.minutes(1))) func idleAndSlowConnectionsAreClosed() async throws {
        let limits = TCPLimits(maxConnections: 16, idleTimeout: .milliseconds(400), readTimeout: .milliseconds(300))
        try await withServer(limits) { server, port in
            let idle = Self.connectTCP(port)
            defer { close(idle) }
            let slow = Self.connectTCP(port)
            defer { close(slow) }
            let partial: [UInt8] = [0, 40, 0x12]
            #expect(partial.withUnsafeBytes { send(slow, $0.baseAddress, 3, 0) } == 3)
            let start = Date()
            #expect(Self.closedByServer(slow, within: 2))
            #expect(Date().timeIntervalSince(start) < 1.5)
            #expect(Self.closedByServer(idle, within: 2))
            #expect(server.statistics.tcpTimedOut == 2)
        }
    }

    /// 3,000 idle connections against a cap of 2,500: 2,500 are held, 500 turned away, and UDP
    /// keeps answering meanwhile: 200 queries sent one after another, every one answered, each
    /// within 250 ms. The test closes every connection it opened.
    @Test(.timeLimit(.minutes(2))) func thousandsOfIdleConnectionsDoNotStopUDP() async throws {
        // 3,000 client and 2,500 server descriptors in this one process: lift the soft limit to the
        // hard one (a login shell's soft limit may be 1024).
        var files = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &files)
        files.rlim_cur = files.rlim_max
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &files)
        #expect(files.rlim_max >= 6000, "this test needs 5,500 descriptors; the hard limit is \(files.rlim_max)")
        let limits = TCPLimits(maxConnections: 2500, idleTimeout: .seconds(60), readTimeout: .seconds(60))
        try await withServer(limits) { server, port in
            var sockets: [Int32] = []
            defer { for fd in sockets { close(fd) } }
            for _ in 0..<3000 {
                let fd = Self.connectTCP(port)
                if fd >= 0 { sockets.append(fd) }
            }
            #expect(sockets.count == 3000)
            let deadline = Date().addingTimeInterval(10)
            while server.statistics.tcpConnections + server.statistics.tcpRefused < 3000, Date() < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(server.openTCPConnections == 2500)
            #expect(server.statistics.tcpRefused == 500)

            let engine = QueryEngine(seed: 3)
            let address = try SocketAddress(ipAddress: "127.0.0.1", port: port)
            var worst: UInt64 = 0
            var answered = 0
            for _ in 0..<200 {
                if case .response(_, let rtt) = await engine.query(try query(zone, .soa), to: address, timeout: .milliseconds(250)) {
                    answered += 1
                    worst = max(worst, rtt)
                }
            }
            await engine.shutdown()
            #expect(answered == 200, "\(answered) of 200 UDP queries answered, worst \(worst / 1_000_000) ms")

            for fd in sockets { close(fd) }
            sockets = []
            let closing = Date().addingTimeInterval(5)
            while server.openTCPConnections > 0, Date() < closing { try await Task.sleep(for: .milliseconds(20)) }
            #expect(server.openTCPConnections == 0)
        }
    }

    /// `--edns ignore` answers an authenticated download whole over UDP whatever the asker
    /// advertised; `honor` truncates it; both say so, with the advertised size, in echo replies.
    @Test func ednsModes() throws {
        let ignoring = ProbeResponder(configuration: .init(zone: zone, key: key, ednsMode: .ignore))
        let big = try Self.downloadQuery(bytes: 1300, edns: 1232)
        let whole = try DNSMessage(parsing: #require(ignoring.respond(to: big).response))
        #expect(!whole.header.truncated && !whole.answers.isEmpty)
        #expect(try DNSMessage(parsing: #require(responder.respond(to: big).response)).header.truncated)
        // A probe may ask for the other behaviour (`scan --edns`): whole from an honouring responder,
        // truncated from an ignoring one.
        func download(_ request: ProbeMeta.EDNSRequest) throws -> [UInt8] {
            let meta = ProbeMeta.download(nonce: [3, 1, 4, 1, 5, 9, 2, 6], bytes: 1300, type: .txt, edns: request)
            return try query(ProbeName.build(meta: meta, zone: zone, key: key), .txt, edns: 1232)
        }
        #expect(try !DNSMessage(parsing: #require(responder.respond(to: download(.ignore)).response)).header.truncated)
        #expect(try DNSMessage(parsing: #require(ignoring.respond(to: download(.honor)).response)).header.truncated)
        #expect(try !DNSMessage(parsing: #require(ignoring.respond(to: download(.server)).response)).header.truncated)

        let nonce: [UInt8] = [9, 9, 8, 8, 7, 7, 6, 6]
        let name = try ProbeName.build(meta: ProbeMeta(kind: .echo, nonce: nonce, totalCharacters: ProbeMeta.characterCount),
                                       zone: zone, key: key)
        for (server, honors) in [(responder, true), (ignoring, false)] {
            for transport in [ProbeResponder.Transport.udp, .tcp] {
                let r = try DNSMessage(parsing: #require(server.respond(to: query(name, edns: 1232), source: [],
                                                                        transport: transport).response))
                guard case .txt(let strings) = try #require(r.answers.first).rdata else { Issue.record("not TXT"); return }
                let reply = try ProbeReply.open(strings[0], nonce: nonce, key: key)
                #expect(reply.observed == ProbeReply.Observed(advertisedSize: 1232, overTCP: transport == .tcp, honorsEDNS: honors))
            }
        }
    }
}
