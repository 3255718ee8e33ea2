import Base
import Foundation
import OSLayer
import Testing
import TestSupport
@testable import TunnelVerify
#if canImport(Glibc)
import Glibc
#endif

/// The sandbox's HTTP and SOCKS5 client (`SandboxConnection`, NIO with NIOSOCKS) against a small
/// HTTP server and a small SOCKS5 proxy on loopback, entered through this process's own network
/// namespace (entering a namespace needs root).
@Suite(.serialized, .enabled(if: LabGate.root.runs, "entering a network namespace needs root"))
struct SandboxConnectionTests {
    static let ownNamespace = "/proc/self/ns/net"

    @Test(.timeLimit(.minutes(1))) func aGetGoesStraightAndThroughTheProxy() async throws {
        try LabGate.root.check()
        let server = try LoopbackTCPServer { _ in Array("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n203.0.113.7\n".utf8) }
        defer { server.stop() }
        let url = try #require(WhoamiURL("http://127.0.0.1:\(server.port)/ip"))
        let straight = await SandboxProbes.httpGet(url: url, socks: nil, namespacePath: Self.ownNamespace, timeout: .seconds(5))
        #expect(try straight.get() == "203.0.113.7")
        let proxy = try LoopbackSOCKS5.start { _ in nil }
        defer { proxy.stop() }
        let socks = Endpoint(address: .v4(0x7F00_0001), port: proxy.port)
        let proxied = await SandboxProbes.httpGet(url: url, socks: socks, namespacePath: Self.ownNamespace, timeout: .seconds(5))
        #expect(try proxied.get() == "203.0.113.7")
        #expect(proxy.requests == ["127.0.0.1:\(server.port)"])
        #expect(server.requests.first?.hasPrefix("GET /ip HTTP/1.0\r\n") == true)
    }

    /// A refused CONNECT is named with RFC 1928's reply code; a name goes to the proxy as a name
    /// (ATYP 3), and every refused name still counts as resolved by the proxy.
    @Test(.timeLimit(.minutes(1))) func aRefusedConnectIsNamedWithItsReply() async throws {
        try LabGate.root.check()
        let proxy = try LoopbackSOCKS5.start { target in target.hasPrefix("leak-") ? 4 : nil }
        defer { proxy.stop() }
        let socks = Endpoint(address: .v4(0x7F00_0001), port: proxy.port)
        let refused = await SandboxConnection.exchange(host: "leak-1.example.test", port: 80, socks: socks, namespacePath: Self.ownNamespace,
                                                       request: Array("GET / HTTP/1.0\r\n\r\n".utf8), timeout: .seconds(5)) { _, _ in (0, true) }
        guard case .failure(let failure) = refused else { Issue.record("a refused CONNECT passed"); return }
        #expect(failure.description == "SOCKS5 CONNECT leak-1.example.test:80 failed with reply 4 (RFC 1928 6)")
        let replied = await SandboxProbes.socksResolve(names: ["leak-2.example.test", "leak-3.example.test"], socks: socks,
                                                       namespacePath: Self.ownNamespace, timeout: .seconds(5))
        #expect(replied == 2)
        #expect(proxy.requests == ["leak-1.example.test:80", "leak-2.example.test:80", "leak-3.example.test:80"])
        // A name SOCKS5 cannot carry (over 255 bytes) is refused before anything is sent.
        let long = String(repeating: "a", count: 300) + ".test"
        let tooLong = await SandboxConnection.exchange(host: long, port: 80, socks: socks, namespacePath: Self.ownNamespace,
                                                       request: [], timeout: .seconds(2)) { _, _ in (0, true) }
        guard case .failure(let why) = tooLong else { Issue.record("a 305-byte name passed"); return }
        #expect(why.description.contains("over 255 bytes"))
    }

    /// The bulk download counts body bytes up to what was asked and times the first and last byte.
    @Test(.timeLimit(.minutes(1))) func aBulkGetCountsTheBodyItAskedFor() async throws {
        try LabGate.root.check()
        let body = [UInt8](repeating: 0x61, count: 300_000)
        let server = try LoopbackTCPServer { _ in Array("HTTP/1.1 200 OK\r\nContent-Length: 300000\r\n\r\n".utf8) + body }
        defer { server.stop() }
        let url = try #require(WhoamiURL("http://127.0.0.1:\(server.port)/bulk"))
        let sample = try await SandboxProbes.bulkGet(BulkTransfer(url: url, bytes: 200_000, timeout: .seconds(5)), socks: nil,
                                                     namespacePath: Self.ownNamespace).get()
        #expect(sample.bodyBytes == 200_000)
        #expect(sample.firstByteNanos > 0 && sample.lastByteNanos >= sample.firstByteNanos)
        let missing = try LoopbackTCPServer { _ in Array("HTTP/1.1 404 Not Found\r\n\r\nno".utf8) }
        defer { missing.stop() }
        let notFound = await SandboxProbes.bulkGet(BulkTransfer(url: try #require(WhoamiURL("http://127.0.0.1:\(missing.port)/bulk")),
                                                                bytes: 10, timeout: .seconds(5)), socks: nil, namespacePath: Self.ownNamespace)
        guard case .failure(let why) = notFound else { Issue.record("a 404 passed"); return }
        #expect(why.description == "the server answered HTTP/1.1 404 Not Found")
    }
}

/// What a loopback server's thread and the test share.
final class LoopbackRecord: @unchecked Sendable {
    private let lock = NSLock()
    private var stoppedFlag = false
    private var items: [String] = []
    var stopped: Bool { lock.withLock { stoppedFlag } }
    var all: [String] { lock.withLock { items } }
    func stop() { lock.withLock { stoppedFlag = true } }
    func append(_ item: String) { lock.withLock { items.append(item) } }
}

/// A TCP listener on 127.0.0.1 whose thread hands each connection to `handle` and closes it;
/// `requests` is what the handler recorded.
final class LoopbackTCPServer: @unchecked Sendable {
    let port: UInt16
    private let fd: Int32
    private let record = LoopbackRecord()
    private let thread: Thread

    var requests: [String] { record.all }

    init(handle: @escaping @Sendable (_ client: Int32, _ record: LoopbackRecord) -> Void) throws {
        (fd, port) = try Self.listen()
        let fd = self.fd
        let record = self.record
        thread = Thread {
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 { if record.stopped { return } else { continue } }
                handle(client, record)
                close(client)
            }
        }
        thread.start()
    }

    /// Answers each connection's first read with `respond`.
    convenience init(respond: @escaping @Sendable (String) -> [UInt8]) throws {
        try self.init { client, record in
            var buffer = [UInt8](repeating: 0, count: 4096)
            let n = recv(client, &buffer, buffer.count, 0)
            let request = n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : ""
            record.append(request)
            Self.write(client, respond(request))
        }
    }

    func stop() {
        record.stop()
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
        while !thread.isFinished { usleep(5_000) }
    }

    static func write(_ socket: Int32, _ bytes: [UInt8]) {
        var sent = 0
        while sent < bytes.count {
            let m = bytes[sent...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if m <= 0 { return }
            sent += m
        }
    }

    static func readExactly(_ socket: Int32, _ count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            let n = bytes[got...].withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return nil }
            got += n
        }
        return bytes
    }

    /// A listening TCP socket on 127.0.0.1 and its port.
    static func listen() throws -> (Int32, UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard fd >= 0, bound == 0, Glibc.listen(fd, 16) == 0 else { throw LoopbackFailure() }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return (fd, UInt16(bigEndian: address.sin_port))
    }

    struct LoopbackFailure: Error {}
}

/// A SOCKS5 proxy (RFC 1928, no authentication, CONNECT only) on 127.0.0.1: `refuse(target)` gives
/// the reply code to refuse a target with, or nil to connect it (IPv4 targets only) and relay one
/// request and its whole answer. Its `requests` are the targets asked for, "host:port".
enum LoopbackSOCKS5 {
    static func start(refuse: @escaping @Sendable (String) -> UInt8?) throws -> LoopbackTCPServer {
        try LoopbackTCPServer { client, record in
            let read = LoopbackTCPServer.readExactly
            let write = LoopbackTCPServer.write
            guard let greeting = read(client, 2), greeting[0] == 5, read(client, Int(greeting[1])) != nil else { return }
            write(client, [5, 0])
            guard let head = read(client, 4), head[0] == 5, head[1] == 1 else { return }
            var host = ""
            switch head[3] {
            case 1: host = (read(client, 4) ?? []).map(String.init).joined(separator: ".")
            case 3: if let n = read(client, 1), let name = read(client, Int(n[0])) { host = String(decoding: name, as: UTF8.self) }
            default: return
            }
            guard let portBytes = read(client, 2) else { return }
            let port = Int(portBytes[0]) << 8 | Int(portBytes[1])
            record.append("\(host):\(port)")
            if let code = refuse("\(host):\(port)") {
                write(client, [5, code, 0, 1, 0, 0, 0, 0, 0, 0])
                return
            }
            let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(upstream) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr(host)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else {
                write(client, [5, 5, 0, 1, 0, 0, 0, 0, 0, 0])
                return
            }
            write(client, [5, 0, 0, 1, 127, 0, 0, 1, 0, 0])
            var buffer = [UInt8](repeating: 0, count: 65536)
            let n = recv(client, &buffer, buffer.count, 0)
            if n > 0 { write(upstream, Array(buffer[0..<n])) }
            while true {
                let m = recv(upstream, &buffer, buffer.count, 0)
                if m <= 0 { break }
                write(client, Array(buffer[0..<m]))
            }
        }
    }
}
