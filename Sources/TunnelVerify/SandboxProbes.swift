import Base
import OSLayer
import Foundation

/// Traffic made from inside the sandbox the way an app there would make it: sockets created on
/// a thread that entered the sandbox's namespace, so they follow its routes and resolv.conf
/// servers. Blocking calls with short timeouts; each runs on its own thread.
enum SandboxProbes {
    /// An HTTP/1.0 GET as the engine carries it: through its SOCKS5 proxy when it has one
    /// (`socks`), else straight from the sandbox, where the routes lead into the TUN. Returns the
    /// body or why it failed. The one HTTP client of verify, resilience and `scan --e2e`
    /// (`SandboxConnection`, `getRequest`; `bulkGet` times a longer body the same way).
    static func httpGet(url: WhoamiURL, socks: Endpoint?, namespacePath: String, timeout: Duration) async -> Result<String, SandboxProbeFailure> {
        let answer = await SandboxConnection.exchange(host: url.host, port: url.port, socks: socks, namespacePath: namespacePath,
                                                      request: getRequest(url, agent: "tunnelprobe-verify"), timeout: timeout) { answer, chunk in
            // At most 64 KiB of answer; the connection is closed after it (HTTP/1.0).
            let room = max(0, 65536 - answer.kept.count)
            return (keep: min(room, chunk.readableBytes), done: chunk.readableBytes >= room)
        }
        switch answer {
        case .failure(let failure):
            return .failure(failure)
        case .success(let answer):
            // What came before a reset or the deadline is still the answer, if anything came.
            if answer.kept.isEmpty {
                return .failure(SandboxProbeFailure("no response within \(timeout)\(answer.error.map { ": \($0)" } ?? "")"))
            }
            return parseHTTP(answer.kept)
        }
    }

    /// An HTTP/1.0 GET of the URL's path, the connection closed after the answer.
    static func getRequest(_ url: WhoamiURL, agent: String) -> [UInt8] {
        Array("GET \(url.path) HTTP/1.0\r\nHost: \(url.hostHeader)\r\nUser-Agent: \(agent)\r\nConnection: close\r\n\r\n".utf8)
    }

    /// Asks the SOCKS5 proxy to connect to each name (resolved by the proxy, ATYP 3); the
    /// outcome does not matter, the resolution does. Returns how many CONNECTs got any reply.
    static func socksResolve(names: [String], socks: Endpoint, namespacePath: String, timeout: Duration) async -> Int {
        var replied = 0
        for name in names {
            let outcome = await SandboxConnection.exchange(host: name, port: 80, socks: socks, namespacePath: namespacePath,
                                                           request: [], timeout: timeout) { _, _ in (keep: 0, done: true) }
            switch outcome {
            case .success: replied += 1
            case .failure(let failure): if failure.description.contains("failed with reply") { replied += 1 }
            }
        }
        return replied
    }

    static func parseHTTP(_ bytes: [UInt8]) -> Result<String, SandboxProbeFailure> {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { return .failure(SandboxProbeFailure("malformed HTTP response (\(bytes.count) bytes)")) }
        let status = text[..<split.lowerBound].split(separator: "\r\n").first ?? ""
        let parts = status.split(separator: " ")
        guard parts.count >= 2, parts[1] == "200" else { return .failure(SandboxProbeFailure("HTTP status line \"\(status)\"")) }
        return .success(text[split.upperBound...].trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// The socket address of an IP literal; nil for anything else (a name is never resolved here).
    static func socketAddress(host: String, port: Int) -> IPSocketAddress? {
        IPAddress(host).map { IPSocketAddress($0, port: port) }
    }

    /// A TCP connection with a bounded connect, then blocking I/O with SO_RCVTIMEO/SO_SNDTIMEO
    /// (`BlockingSocket.connectTCP`, OSLayer).
    static func connectTCP(host: String, port: Int, timeoutMs: Int) -> Result<BlockingSocket, SandboxProbeFailure> {
        guard let address = socketAddress(host: host, port: port) else {
            return .failure(SandboxProbeFailure("connect to \(host):\(port): not an IP address"))
        }
        return connectTCP(to: address, label: "\(host):\(port)", timeoutMs: timeoutMs)
    }

    static func connectTCP(to address: IPSocketAddress, label: String, timeoutMs: Int) -> Result<BlockingSocket, SandboxProbeFailure> {
        do {
            return .success(try BlockingSocket.connectTCP(to: address, timeoutMs: timeoutMs))
        } catch {
            if case .socket(let code) = error { return .failure(SandboxProbeFailure("socket: \(code)")) }
            return .failure(SandboxProbeFailure("connect to \(label): \(error)"))
        }
    }

    /// Sends the queries to `server` over UDP and collects responses by DNS id until every query
    /// is answered or `wait` passes.
    static func dnsQueries(_ queries: [[UInt8]], server: String, namespacePath: String, wait: Duration) async -> [UInt16: [UInt8]] {
        let answered = try? await NamespaceThread.run(in: namespacePath) { () -> [UInt16: [UInt8]] in
            guard let target = socketAddress(host: server, port: 53), let socket = try? BlockingSocket.open(.udp, for: target) else { return [:] }
            defer { socket.close() }
            for query in queries { _ = try? socket.send(query, to: target) }
            var ids = Set(queries.compactMap { $0.count >= 2 ? UInt16($0[0]) << 8 | UInt16($0[1]) : nil })
            var responses: [UInt16: [UInt8]] = [:]
            let deadline = ContinuousClock.now + wait
            while !ids.isEmpty, ContinuousClock.now < deadline {
                guard socket.wait(for: .readable, timeoutMs: 20) else { continue }
                guard let response = try? socket.receive(maximum: 65536, dontWait: true), response.count >= 12 else { continue }
                let id = UInt16(response[0]) << 8 | UInt16(response[1])
                if ids.remove(id) != nil { responses[id] = response }
            }
            return responses
        }
        return answered ?? [:]
    }

    /// Fire-and-forget traffic: a UDP datagram and a TCP connection attempt to `host`, what an
    /// app's first packets look like. Returns immediately after the attempts (bounded by `wait`).
    static func poke(host: String, port: Int, namespacePath: String, wait: Duration) async {
        _ = try? await NamespaceThread.run(in: namespacePath) { () -> Bool in
            if let target = socketAddress(host: host, port: port), let udp = try? BlockingSocket.open(.udp, for: target) {
                _ = try? udp.send(Array("tunnelprobe-verify".utf8), to: target)
                udp.close()
            }
            if case .success(let socket) = connectTCP(host: host, port: port, timeoutMs: wait.milliseconds) { socket.close() }
            return true
        }
    }
}

/// Why a probe from inside the sandbox failed, in words for the run's log.
struct SandboxProbeFailure: Error, Sendable, CustomStringConvertible {
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
