public import Base
import Foundation
public import NIOCore
import NIOConcurrencyHelpers
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import Crypto
public import Results

/// A TLS handshake that did not finish within the query timeout.
struct HandshakeStalled: Error {}

/// Why the stream transports cannot start.
public struct TransportSetupError: Error, Sendable, CustomStringConvertible {
    public var reason: String
    public var description: String { reason }
}

/// The query engine for resolvers reached over TCP (RFC 7766), TLS (RFC 7858) and HTTPS (RFC 8484):
/// the stream-transport counterpart of `QueryEngine`'s UDP. Per resolver it keeps at most
/// `settings.connectionsPerResolver` connections open, pipelines queries on them (TCP/TLS: two-byte
/// framing, answers matched by DNS id; DoH: one HTTP/2 stream per query) and ends each query at its
/// timeout. A connection that cannot be made leaves a named `TransportFailure` for its resolver.
public final class ResolverTransports: @unchecked Sendable {
    public let settings: TransportSettings
    private let group: MultiThreadedEventLoopGroup
    private let loop: any EventLoop
    private let contexts: Contexts
    private let seed: UInt64
    // Confined to `loop`.
    private var pools: [ResolverTarget: [Connection]] = [:]
    private var serial: UInt64 = 0
    private let failures = NIOLockedValueBox<[Endpoint: TransportFailure]>([:])
    private let counts = NIOLockedValueBox<[Endpoint: ConnectionCounts]>([:])

    /// The TLS contexts: verified as configured, and the two a failed handshake is diagnosed with.
    struct Contexts: Sendable {
        var dot: NIOSSLContext
        var doh: NIOSSLContext
        /// Chain checked, name not: a handshake that passes here failed only on the name.
        var dotNoName: NIOSSLContext
        var dohNoName: NIOSSLContext
    }

    public init(settings: TransportSettings = TransportSettings(), seed: UInt64) throws(TransportSetupError) {
        self.settings = settings
        self.seed = seed
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        loop = group.next()
        do {
            func make(_ alpn: [String], _ verification: CertificateVerification) throws -> NIOSSLContext {
                var configuration = TLSConfiguration.makeClientConfiguration()
                configuration.minimumTLSVersion = .tlsv12
                configuration.certificateVerification = verification
                if let caFile = settings.caFile {
                    configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caFile))
                }
                configuration.applicationProtocols = alpn
                return try NIOSSLContext(configuration: configuration)
            }
            // RFC 8484 5.2: DoH is HTTP/2 ("h2"); RFC 7858 has no ALPN requirement (RFC 9461 names "dot").
            contexts = Contexts(dot: try make([], .fullVerification), doh: try make(["h2"], .fullVerification),
                                dotNoName: try make([], .noHostnameVerification), dohNoName: try make(["h2"], .noHostnameVerification))
        } catch {
            try? group.syncShutdownGracefully()
            throw TransportSetupError(reason: settings.caFile.map { "cannot read the CA file \($0): \(error)" } ?? "cannot set up TLS: \(error)")
        }
        if let pin = settings.pin, Data(base64Encoded: pin)?.count != 32 {
            try? group.syncShutdownGracefully()
            throw TransportSetupError(reason: "the pin '\(pin)' is not the base64 of a SHA-256 digest (44 characters)")
        }
    }

    /// The last connection failure of a resolver (nil when its connections came up).
    public func failure(of endpoint: Endpoint) -> TransportFailure? {
        failures.withLockedValue { $0[endpoint] }
    }

    /// The connections to a resolver set up and failed so far (zero counts when none was tried).
    public func connections(of endpoint: Endpoint) -> ConnectionCounts {
        counts.withLockedValue { $0[endpoint] } ?? ConnectionCounts()
    }

    /// Sends `query` to `target` and waits for its answer. The DNS id is replaced (TCP/TLS: a free
    /// id on the connection; DoH: 0, RFC 8484 4.1, the stream identifies the answer).
    public func query(_ query: [UInt8], to target: ResolverTarget, timeout: TimeAmount) async -> QueryResult {
        guard query.count >= 12 else { return .sendFailed("query shorter than a DNS header") }
        guard target.transport != .udp else { return .sendFailed("a UDP resolver goes through QueryEngine") }
        if target.transport == .https, settings.dohMethod == .get {
            let length = TransportSettings.getTargetLength(path: target.path ?? ResolverTarget.defaultPath, queryBytes: query.count)
            if length > settings.dohGetURILimit {
                return .sendFailed("https: uriTooLong: the GET request target would be \(length) characters, above the limit of \(settings.dohGetURILimit) (--doh-get-uri-limit); POST carries the query in the body")
            }
        }
        let promise = loop.makePromise(of: QueryResult.self)
        let request = StreamQuery(bytes: query, promise: promise)
        loop.execute { self.start(request, target: target, timeout: timeout) }
        let result = (try? await promise.futureResult.get()) ?? .sendFailed("transport stopped")
        // The resolver refused this query over a working connection (DoH: an HTTP error status):
        // the resolver's failure until a connection is set up again, not a failed connection.
        if let failure = request.failure { failures.withLockedValue { $0[target.endpoint] = failure } }
        return result
    }

    public func shutdown() async {
        let open: [Connection] = (try? await loop.submit { self.pools.values.flatMap { $0 } }.get()) ?? []
        for connection in open { try? await connection.channel?.close() }
        try? await group.shutdownGracefully()
    }

    // MARK: on the loop

    private func start(_ request: StreamQuery, target: ResolverTarget, timeout: TimeAmount) {
        request.timer = loop.scheduleTask(in: timeout) { request.finish(.timeout) }
        var pool = (pools[target] ?? []).filter { !$0.isDead }
        let best = pool.min { $0.load < $1.load }
        let connection: Connection
        if let best, best.load < settings.pipelineDepth || pool.count >= max(1, settings.connectionsPerResolver) {
            connection = best
        } else {
            serial &+= 1
            connection = Connection(target: target, seed: seed ^ serial &* 0x9E37_79B9_7F4A_7C15)
            pool.append(connection)
            open(connection, timeout: timeout)
        }
        pools[target] = pool
        connection.load += 1
        let previous = request.onFinish
        request.onFinish = { [weak connection] in
            previous?()
            connection?.load -= 1
        }
        connection.submit(request)
    }

    private func open(_ connection: Connection, timeout: TimeAmount) {
        let target = connection.target
        guard let address = try? SocketAddress(ipAddress: target.endpoint.host, port: Int(target.endpoint.port)) else {
            connection.fail(.connectFailed("bad address \(target.endpoint)"))
            return
        }
        let ready = OncePromise(on: loop)
        let stream = StreamDNSHandler(seed: connection.seed)
        let pinBox = NIOLockedValueBox<String?>(nil)
        let contexts = self.contexts
        let pin = settings.pin
        let bootstrap = ClientBootstrap(group: loop)
            .connectTimeout(timeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    if target.transport == .tls || target.transport == .https {
                        let context = target.transport == .tls ? contexts.dot : contexts.doh
                        // SNI carries names only (RFC 6066 3); without one NIOSSL checks the address against the IP SANs.
                        let name = target.serverName
                        let handler: NIOSSLClientHandler
                        if let pin {
                            // kdig +tls-pin: the key alone is checked (RFC 7858 4.2's out-of-band key-pinned profile).
                            handler = try NIOSSLClientHandler(context: context, serverHostname: name) { chain, result in
                                let seen = chain.first.flatMap { try? $0.extractPublicKey().toSPKIBytes() }
                                    .map { Data(SHA256.hash(data: $0)).base64EncodedString() } ?? "none"
                                if seen != pin { pinBox.withLockedValue { $0 = seen } }
                                result.succeed(seen == pin ? NIOSSLVerificationResult.certificateVerified : NIOSSLVerificationResult.failed)
                            }
                        } else {
                            handler = try NIOSSLClientHandler(context: context, serverHostname: name)
                        }
                        try sync.addHandler(handler)
                        try sync.addHandler(HandshakeWatcher(ready: ready))
                        connection.tlsHandler = handler
                    } else {
                        ready.succeed()
                    }
                    if target.transport == .https {
                        // HTTP/2 after TLS: its preface waits in NIOSSL's buffer until the handshake is done.
                        connection.multiplexerInWaiting = try sync.configureHTTP2Pipeline(
                            mode: .client, connectionConfiguration: .init(), streamConfiguration: .init(),
                            inboundStreamInitializer: { $0.eventLoop.makeSucceededVoidFuture() })
                    } else {
                        try sync.addHandler(ByteToMessageHandler(DNSStreamFrameDecoder()))
                        try sync.addHandler(stream)
                    }
                }
            }
        bootstrap.connect(to: address).whenComplete { [self] result in
            switch result {
            case .failure(let error):
                ready.fail(error)
                record(target, Self.connectFailure(error))
                connection.fail(Self.connectFailure(error))
            case .success(let channel):
                connection.channel = channel
                // A server that takes the connection but never finishes the handshake.
                let stall = loop.scheduleTask(in: timeout) { ready.fail(HandshakeStalled()) }
                ready.futureResult.whenComplete { [self] outcome in
                    stall.cancel()
                    switch outcome {
                    case .success:
                        // NIOSSL also takes a certificate whose IP SAN matches the address when a
                        // name was asked (RFC 6125 6.2 leaves that to the client); a `#name` must be
                        // carried as a DNS name, as kdig and dnstt require.
                        if pin == nil, let name = target.serverName,
                           let leaf = connection.tlsHandler?.peerCertificate, !Self.carries(leaf, name: name) {
                            channel.close(promise: nil)
                            record(target, .wrongName(asked: name))
                            connection.fail(.wrongName(asked: name))
                            return
                        }
                        record(target, nil)
                        connection.becameReady(stream: stream, multiplexer: connection.multiplexerInWaiting, dohMethod: settings.dohMethod)
                    case .failure(let error):
                        channel.close(promise: nil)
                        if let seen = pinBox.withLockedValue({ $0 }) {
                            record(target, .pinMismatch(seen: seen))
                            connection.fail(.pinMismatch(seen: seen))
                            return
                        }
                        if error is HandshakeStalled {
                            record(target, .handshakeTimeout)
                            connection.fail(.handshakeTimeout)
                            return
                        }
                        diagnose(target, error: error, timeout: timeout) { [self] failure in
                            record(target, failure)
                            connection.fail(failure)
                        }
                    }
                }
            }
        }
    }

    private func record(_ target: ResolverTarget, _ failure: TransportFailure?) {
        failures.withLockedValue { $0[target.endpoint] = failure }
        counts.withLockedValue { counts in
            var c = counts[target.endpoint] ?? ConnectionCounts()
            if let failure {
                c.failed += 1
                c.failures[failure.name, default: 0] += 1
            } else {
                c.opened += 1
            }
            counts[target.endpoint] = c
        }
    }

    static func connectFailure(_ error: any Error) -> TransportFailure {
        if let io = error as? IOError, io.errnoCode == 111 { return .connectionRefused }
        if let channel = error as? ChannelError, case .connectTimeout = channel { return .connectTimeout }
        if let connect = error as? NIOConnectionError {
            if connect.connectionErrors.contains(where: { ($0.error as? IOError)?.errnoCode == 111 }) { return .connectionRefused }
            if let first = connect.connectionErrors.first { return connectFailure(first.error) }
        }
        return .connectFailed("\(error)")
    }

    /// Whether the certificate carries `name` as a DNS subjectAltName (RFC 6125 6.4: exact, or a
    /// wildcard for the whole leftmost label).
    static func carries(_ certificate: NIOSSLCertificate, name: String) -> Bool {
        let asked = name.lowercased().split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        for san in certificate._subjectAlternativeNames() where san.nameType == .dnsName {
            let labels = String(decoding: Array(san.contents), as: UTF8.self).lowercased()
                .split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard labels.count == asked.count, !labels.isEmpty else { continue }
            if labels == asked || (labels[0] == "*" && Array(labels.dropFirst()) == Array(asked.dropFirst())) { return true }
        }
        return false
    }

    /// Names a failed TLS handshake by what a second look shows (one or two more connections, made
    /// only after a failure): whether the server showed a certificate at all, whether that chain
    /// is within its dates, and whether it passes when only the name is not checked.
    private func diagnose(_ target: ResolverTarget, error: any Error, timeout: TimeAmount,
                          done: @escaping @Sendable (TransportFailure) -> Void) {
        guard target.transport != .tcp else {
            done(.closed("\(error)"))
            return
        }
        guard let address = try? SocketAddress(ipAddress: target.endpoint.host, port: Int(target.endpoint.port)) else {
            done(.connectFailed("bad address"))
            return
        }
        let contexts = self.contexts
        let chain = NIOLockedValueBox<[NIOSSLCertificate]?>(nil)
        let firstError = "\(error)"
        let loop = self.loop
        @Sendable func handshake(_ context: NIOSSLContext, capture: Bool) -> EventLoopFuture<Void> {
            let ready = OncePromise(on: loop)
            ClientBootstrap(group: loop).connectTimeout(timeout).channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handler: NIOSSLClientHandler
                    if capture {
                        handler = try NIOSSLClientHandler(context: context, serverHostname: target.serverName) { certificates, result in
                            chain.withLockedValue { $0 = certificates }
                            result.succeed(NIOSSLVerificationResult.failed)
                        }
                    } else {
                        handler = try NIOSSLClientHandler(context: context, serverHostname: target.serverName)
                    }
                    try channel.pipeline.syncOperations.addHandler(handler)
                    try channel.pipeline.syncOperations.addHandler(HandshakeWatcher(ready: ready))
                }
            }.connect(to: address).whenComplete { result in
                switch result {
                case .success(let channel):
                    let stall = loop.scheduleTask(in: timeout) { ready.fail(HandshakeStalled()) }
                    ready.futureResult.whenComplete { _ in
                        stall.cancel()
                        channel.close(promise: nil)
                    }
                case .failure(let error): ready.fail(error)
                }
            }
            return ready.futureResult
        }
        let checked = target.transport == .tls ? contexts.dot : contexts.doh
        let nameless = target.transport == .tls ? contexts.dotNoName : contexts.dohNoName
        handshake(checked, capture: true).whenComplete { _ in
            guard let certificates = chain.withLockedValue({ $0 }), !certificates.isEmpty else {
                done(.handshakeRefused(firstError))
                return
            }
            let now = Int(Date().timeIntervalSince1970)
            if let stale = certificates.first(where: { Int($0.notValidAfter) < now || Int($0.notValidBefore) > now }) {
                done(.expired(notAfter: Int(stale.notValidAfter)))
                return
            }
            handshake(nameless, capture: false).whenComplete { outcome in
                switch outcome {
                case .success: done(.wrongName(asked: target.tlsName))
                case .failure: done(.unknownCA)
                }
            }
        }
    }

    /// One connection to a resolver: queries wait here while it connects.
    final class Connection: @unchecked Sendable {
        let target: ResolverTarget
        let seed: UInt64
        var channel: (any Channel)?
        var tlsHandler: NIOSSLClientHandler?
        var load = 0
        private var waiting: [StreamQuery] = []
        private var stream: StreamDNSHandler?
        private var multiplexer: NIOHTTP2Handler.StreamMultiplexer?
        /// Set by the channel initializer; used once the handshake is done.
        var multiplexerInWaiting: NIOHTTP2Handler.StreamMultiplexer?
        private var dohMethod = TransportSettings.DoHMethod.post
        private var failure: TransportFailure?

        init(target: ResolverTarget, seed: UInt64) {
            self.target = target
            self.seed = seed
        }

        var isDead: Bool { failure != nil || (channel.map { !$0.isActive } ?? false) }

        func submit(_ query: StreamQuery) {
            if let failure {
                query.finish(.sendFailed("\(target.transport): \(failure.name): \(failure)"))
            } else if let stream {
                stream.send(query)
            } else if let multiplexer {
                sendDoH(query, on: multiplexer)
            } else {
                waiting.append(query)
            }
        }

        func becameReady(stream: StreamDNSHandler, multiplexer: NIOHTTP2Handler.StreamMultiplexer?, dohMethod: TransportSettings.DoHMethod) {
            self.dohMethod = dohMethod
            if let multiplexer { self.multiplexer = multiplexer } else { self.stream = stream }
            let queued = waiting
            waiting.removeAll()
            queued.forEach(submit)
        }

        func fail(_ failure: TransportFailure) {
            self.failure = failure
            let queued = waiting
            waiting.removeAll()
            queued.forEach(submit)
        }

        private func sendDoH(_ query: StreamQuery, on multiplexer: NIOHTTP2Handler.StreamMultiplexer) {
            var bytes = query.bytes
            // RFC 8484 4.1: the DNS id SHOULD be 0 for cache friendliness; the stream matches the answer.
            bytes[0] = 0
            bytes[1] = 0
            let path = target.path ?? ResolverTarget.defaultPath
            let authority = target.serverName ?? (target.endpoint.isIPv6 ? "[\(target.endpoint.host)]" : target.endpoint.host)
            var headers = HTTPHeaders()
            headers.add(name: "host", value: target.endpoint.port == 443 ? authority : "\(authority):\(target.endpoint.port)")
            headers.add(name: "accept", value: "application/dns-message")
            let head: HTTPRequestHead
            let body: [UInt8]?
            switch dohMethod {
            case .post:
                headers.add(name: "content-type", value: "application/dns-message")
                headers.add(name: "content-length", value: "\(bytes.count)")
                head = HTTPRequestHead(version: .http2, method: .POST, uri: path, headers: headers)
                body = bytes
            case .get:
                head = HTTPRequestHead(version: .http2, method: .GET, uri: path + "?dns=" + Self.base64url(bytes), headers: headers)
                body = nil
            }
            multiplexer.createStreamChannel { stream in
                stream.eventLoop.makeCompletedFuture {
                    try stream.pipeline.syncOperations.addHandlers([
                        HTTP2FramePayloadToHTTP1ClientCodec(httpProtocol: .https),
                        DoHStreamHandler(query: query, head: head, body: body),
                    ])
                }
            }.whenFailure { error in query.finish(.sendFailed("https: cannot open a stream: \(error)")) }
        }

        /// RFC 4648 5 without padding (RFC 8484 4.1).
        static func base64url(_ bytes: [UInt8]) -> String {
            String(Data(bytes).base64EncodedString().compactMap { c -> Character? in
                switch c {
                case "+": "-"
                case "/": "_"
                case "=": nil
                default: c
                }
            })
        }
    }
}
