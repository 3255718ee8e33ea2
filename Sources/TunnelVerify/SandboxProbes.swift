import Base
import OSLayer
import Foundation
import Glibc

/// Traffic made from inside the sandbox the way an app there would make it: sockets created on
/// a thread that entered the sandbox's namespace, so they follow its routes and resolv.conf
/// servers. Blocking calls with short timeouts; each runs on its own thread.
enum SandboxProbes {
    /// An HTTP/1.0 GET; returns the body or why it failed.
    static func httpGet(url: WhoamiURL, namespacePath: String, timeout: Duration) async -> Result<String, ProbeFailure> {
        let result = try? await NamespaceThread.run(in: namespacePath) { () -> Result<String, ProbeFailure> in
            let fd = connectTCP(host: url.host, port: url.port, timeoutMs: timeout.milliseconds)
            guard case .success(let socket) = fd else {
                if case .failure(let failure) = fd { return .failure(failure) }
                return .failure(ProbeFailure("connect failed"))
            }
            defer { close(socket) }
            let request = "GET \(url.path) HTTP/1.0\r\nHost: \(url.hostHeader)\r\nUser-Agent: tunnelprobe-verify\r\nConnection: close\r\n\r\n"
            let bytes = Array(request.utf8)
            guard bytes.withUnsafeBytes({ send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count else {
                return .failure(ProbeFailure("send failed: \(String(cString: strerror(errno)))"))
            }
            var response: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while response.count < 65536 {
                let n: Int
                do {
                    n = try SystemCall.retryingInterrupts { buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) } }
                } catch {
                    return .failure(ProbeFailure("no response within \(timeout): \(error)"))
                }
                if n == 0 { break }
                response += buffer[0..<n]
            }
            return parseHTTP(response)
        }
        return result ?? .failure(ProbeFailure("cannot enter the sandbox"))
    }

    /// The GET as the engine carries it: through its SOCKS5 proxy when it has one (`socks`), else
    /// straight from the sandbox, where the routes lead into the TUN.
    static func httpGet(url: WhoamiURL, socks: Endpoint?, namespacePath: String, timeout: Duration) async -> Result<String, ProbeFailure> {
        if let socks { return await httpGetViaSOCKS(url: url, socks: socks, namespacePath: namespacePath, timeout: timeout) }
        return await httpGet(url: url, namespacePath: namespacePath, timeout: timeout)
    }

    /// The same GET through a SOCKS5 proxy inside the sandbox (RFC 1928): no authentication,
    /// CONNECT with the host as a domain name (ATYP 3) so the proxy resolves it remotely, or as an
    /// address when it is one.
    static func httpGetViaSOCKS(url: WhoamiURL, socks: Endpoint, namespacePath: String, timeout: Duration) async -> Result<String, ProbeFailure> {
        let result = try? await NamespaceThread.run(in: namespacePath) { () -> Result<String, ProbeFailure> in
            switch socksConnect(socks: socks, host: url.host, port: url.port, timeoutMs: timeout.milliseconds) {
            case .failure(let failure): return .failure(failure)
            case .success(let socket):
                defer { close(socket) }
                let request = "GET \(url.path) HTTP/1.0\r\nHost: \(url.hostHeader)\r\nConnection: close\r\n\r\n"
                guard sendAll(socket, Array(request.utf8)) else { return .failure(ProbeFailure("send through SOCKS failed")) }
                var response: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 4096)
                while response.count < 65536 {
                    let n = (try? SystemCall.retryingInterrupts { buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) } }) ?? -1
                    if n <= 0 { break }
                    response += buffer[0..<n]
                }
                return parseHTTP(response)
            }
        }
        return result ?? .failure(ProbeFailure("cannot enter the sandbox"))
    }

    /// A SOCKS5 CONNECT; the socket is ready for the application's bytes on success.
    static func socksConnect(socks: Endpoint, host: String, port: Int, timeoutMs: Int) -> Result<Int32, ProbeFailure> {
        let connected = connectTCP(host: socks.host, port: Int(socks.port), timeoutMs: timeoutMs)
        guard case .success(let fd) = connected else { return connected }
        func failing(_ text: String) -> Result<Int32, ProbeFailure> { close(fd); return .failure(ProbeFailure(text)) }
        guard sendAll(fd, [5, 1, 0]), let choice = receiveExactly(fd, 2), choice == [5, 0] else {
            return failing("SOCKS5 proxy \(socks) refused the greeting (no-authentication)")
        }
        var request: [UInt8] = [5, 1, 0]
        if let address = IPAddress(host) {
            request += [address.isIPv6 ? 4 : 1] + address.bytes
        } else {
            let name = Array(host.utf8.prefix(255))
            request += [3, UInt8(name.count)] + name
        }
        request += [UInt8(port >> 8), UInt8(port & 0xff)]
        guard sendAll(fd, request), let head = receiveExactly(fd, 4), head[0] == 5 else {
            return failing("SOCKS5 proxy \(socks) sent no reply to CONNECT \(host):\(port)")
        }
        guard head[1] == 0 else { return failing("SOCKS5 CONNECT \(host):\(port) failed with reply \(head[1]) (RFC 1928 6)") }
        let rest: Int? = switch head[3] {
        case 1: 4 + 2
        case 4: 16 + 2
        case 3: receiveExactly(fd, 1).map { Int($0[0]) + 2 }
        default: nil
        }
        guard let rest, receiveExactly(fd, rest) != nil else { return failing("SOCKS5 reply from \(socks) is malformed") }
        return .success(fd)
    }

    static func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    static func receiveExactly(_ fd: Int32, _ count: Int) -> [UInt8]? {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: max(count, 1))
        while bytes.count < count {
            let n = (try? SystemCall.retryingInterrupts { buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, count - bytes.count, 0) } }) ?? -1
            guard n > 0 else { return nil }
            bytes += buffer[0..<n]
        }
        return bytes
    }

    /// Asks the SOCKS5 proxy to connect to each name (resolved by the proxy, ATYP 3); the
    /// outcome does not matter, the resolution does. Returns how many CONNECTs got any reply.
    static func socksResolve(names: [String], socks: Endpoint, namespacePath: String, timeout: Duration) async -> Int {
        let count = try? await NamespaceThread.run(in: namespacePath) { () -> Int in
            var replied = 0
            for name in names {
                switch socksConnect(socks: socks, host: name, port: 80, timeoutMs: timeout.milliseconds) {
                case .success(let fd): close(fd); replied += 1
                case .failure(let failure): if failure.description.contains("failed with reply") { replied += 1 }
                }
            }
            return replied
        }
        return count ?? 0
    }

    static func parseHTTP(_ bytes: [UInt8]) -> Result<String, ProbeFailure> {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { return .failure(ProbeFailure("malformed HTTP response (\(bytes.count) bytes)")) }
        let status = text[..<split.lowerBound].split(separator: "\r\n").first ?? ""
        let parts = status.split(separator: " ")
        guard parts.count >= 2, parts[1] == "200" else { return .failure(ProbeFailure("HTTP status line \"\(status)\"")) }
        return .success(text[split.upperBound...].trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// A TCP connection with a bounded connect (non-blocking connect + poll), then blocking I/O
    /// with SO_RCVTIMEO/SO_SNDTIMEO.
    static func connectTCP(host: String, port: Int, timeoutMs: Int) -> Result<Int32, ProbeFailure> {
        let v6 = host.contains(":")
        let fd = socket(v6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failure(ProbeFailure("socket: \(String(cString: strerror(errno)))")) }
        var timeout = timeval(tv_sec: timeoutMs / 1000, tv_usec: (timeoutMs % 1000) * 1000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        let started = withSocketAddress(host: host, port: port) { address, length in Glibc.connect(fd, address, length) }
        if started != 0, errno != EINPROGRESS {
            let reason = String(cString: strerror(errno))
            close(fd)
            return .failure(ProbeFailure("connect to \(host):\(port): \(reason)"))
        }
        if started != 0 {
            var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            let ready = poll(&poller, 1, Int32(timeoutMs))
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
            guard ready == 1, error == 0 else {
                close(fd)
                let reason = ready == 0 ? "no answer within \(timeoutMs) ms" : String(cString: strerror(error))
                return .failure(ProbeFailure("connect to \(host):\(port): \(reason)"))
            }
        }
        _ = fcntl(fd, F_SETFL, flags)
        return .success(fd)
    }

    /// Sends the queries to `server` over UDP and collects responses by DNS id until every query
    /// is answered or `wait` passes.
    static func dnsQueries(_ queries: [[UInt8]], server: String, namespacePath: String, wait: Duration) async -> [UInt16: [UInt8]] {
        let answered = try? await NamespaceThread.run(in: namespacePath) { () -> [UInt16: [UInt8]] in
            let v6 = server.contains(":")
            let fd = socket(v6 ? AF_INET6 : AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { return [:] }
            defer { close(fd) }
            for query in queries {
                _ = withSocketAddress(host: server, port: 53) { address, length in
                    query.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, 0, address, length) }
                }
            }
            var ids = Set(queries.compactMap { $0.count >= 2 ? UInt16($0[0]) << 8 | UInt16($0[1]) : nil })
            var responses: [UInt16: [UInt8]] = [:]
            let deadline = ContinuousClock.now + wait
            var buffer = [UInt8](repeating: 0, count: 65536)
            while !ids.isEmpty, ContinuousClock.now < deadline {
                var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, 20) == 1 else { continue }
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                guard n >= 12 else { continue }
                let id = UInt16(buffer[0]) << 8 | UInt16(buffer[1])
                if ids.remove(id) != nil { responses[id] = Array(buffer[0..<n]) }
            }
            return responses
        }
        return answered ?? [:]
    }

    /// Fire-and-forget traffic: a UDP datagram and a TCP connection attempt to `host`, what an
    /// app's first packets look like. Returns immediately after the attempts (bounded by `wait`).
    static func poke(host: String, port: Int, namespacePath: String, wait: Duration) async {
        _ = try? await NamespaceThread.run(in: namespacePath) { () -> Bool in
            let v6 = host.contains(":")
            let udp = socket(v6 ? AF_INET6 : AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            if udp >= 0 {
                let payload = Array("tunnelprobe-verify".utf8)
                _ = withSocketAddress(host: host, port: port) { address, length in
                    payload.withUnsafeBytes { sendto(udp, $0.baseAddress, $0.count, 0, address, length) }
                }
                close(udp)
            }
            if case .success(let fd) = connectTCP(host: host, port: port, timeoutMs: wait.milliseconds) { close(fd) }
            return true
        }
    }

    static func withSocketAddress<T>(host: String, port: Int, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        IPSocketAddress(IPAddress(host), port: port).withSockaddr(body)
    }
}

struct ProbeFailure: Error, Sendable, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// `http://IP[:port]/path`: the endpoint that answers with the caller's address. An IP literal,
/// so that checking the exit address never depends on DNS.
public struct WhoamiURL: Sendable, Hashable, Codable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var path: String

    public init?(_ text: String) {
        guard text.hasPrefix("http://") else { return nil }
        let rest = text.dropFirst("http://".count)
        let authority = rest.prefix { $0 != "/" }
        path = rest.count > authority.count ? String(rest.dropFirst(authority.count)) : "/"
        guard let endpoint = try? Endpoint(parsing: String(authority), defaultPort: 80) else { return nil }
        host = endpoint.host
        port = Int(endpoint.port)
    }

    var hostHeader: String { host.contains(":") ? "[\(host)]" : host }
    public var description: String { "http://\(hostHeader):\(port)\(path)" }
}

extension Duration {
    var milliseconds: Int { Int(components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000) }
}
