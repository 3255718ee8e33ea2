public import Logging
public import NIOCore
import NIOPosix
import NIOConcurrencyHelpers

/// The authoritative probe responder on SwiftNIO channels: for every listen address a datagram
/// channel (UDP) and a listening stream channel on the same port (DNS over TCP, RFC 7766, bounded by
/// `TCPLimits`).
public final class ProbeServer: Sendable {
    public struct Statistics: Sendable, CustomStringConvertible {
        public var counts: [ProbeResponder.Disposition: Int] = [:]
        public var rateLimited = 0
        /// TCP connections admitted, turned away at the cap, queries read, connections closed by a
        /// timeout, and connections closed for a frame shorter than a DNS header.
        public var tcpConnections = 0
        public var tcpRefused = 0
        public var tcpQueries = 0
        public var tcpTimedOut = 0
        public var tcpMalformed = 0
        public var description: String {
            let parts = ProbeResponder.Disposition.allCases.compactMap { d in counts[d].map { "\(d.rawValue)=\($0)" } }
            return (parts + ["rateLimited=\(rateLimited)", "tcpConnections=\(tcpConnections)",
                             "tcpRefused=\(tcpRefused)", "tcpQueries=\(tcpQueries)", "tcpTimedOut=\(tcpTimedOut)"])
                .joined(separator: " ")
        }
    }

    private let responder: ProbeResponder
    private let rateLimit: Double
    private let tcpLimits: TCPLimits
    private let openTCP = NIOLockedValueBox(0)
    private let logger: Logger
    private let group: MultiThreadedEventLoopGroup
    private let channels = NIOLockedValueBox<[any Channel]>([])
    private let stats = NIOLockedValueBox(Statistics())
    private let latch = StopLatch()

    public init(responder: ProbeResponder, ratePerSourcePerSecond: Double, threads: Int = 1,
                tcp: TCPLimits = .standard, logger: Logger) {
        self.responder = responder
        self.tcpLimits = tcp
        self.rateLimit = ratePerSourcePerSecond
        self.logger = logger
        self.group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, threads))
    }

    /// Binds every address, UDP and TCP on the same port; returns the bound addresses (port 0
    /// becomes the real port, one both transports could take).
    public func start(listen addresses: [SocketAddress]) async throws -> [SocketAddress] {
        var bound: [SocketAddress] = []
        for address in addresses {
            let (udp, tcp, local) = try await bindUDPAndTCP(address, udp: bindUDP, tcp: bindTCP)
            channels.withLockedValue { $0 += [udp, tcp] }
            watch(udp)
            watch(tcp)
            bound.append(local)
            logger.info("listening", metadata: ["address": "\(local)", "transports": "udp tcp"])
        }
        return bound
    }

    private func bindUDP(_ address: SocketAddress) async throws -> any Channel {
        let handler: @Sendable () -> ResponderHandler = { [responder, rateLimit, logger, stats] in
            ResponderHandler(responder: responder, limiter: SourceRateLimiter(ratePerSecond: rateLimit),
                             logger: logger, stats: stats)
        }
        return try await DatagramBootstrap(group: group)
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 65_536))
            .channelOption(.maxMessagesPerRead, value: 16)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(handler()) }
            }
            .bind(to: address).get()
    }

    private func bindTCP(_ address: SocketAddress) async throws -> any Channel {
        let tcp: @Sendable () -> TCPConnectionHandler = { [responder, tcpLimits, openTCP, stats, logger] in
            TCPConnectionHandler(responder: responder, limits: tcpLimits, open: openTCP, stats: stats, logger: logger)
        }
        return try await listenTCP(group: group, address: address, make: tcp)
    }

    /// Returns when `stop()` has finished (not when the channels' close futures complete: see
    /// `StopLatch`); a listening channel that closes by itself (an error) stops the server too.
    public func wait() async throws {
        await latch.wait()
    }

    /// Closes the channels (answers already queued go out first) and shuts the event loops down.
    /// Idempotent: a second call waits for the first.
    public func stop() async {
        guard latch.begin() else { return await latch.wait() }
        for channel in channels.withLockedValue({ $0 }) { try? await channel.close() }
        try? await group.shutdownGracefully()
        latch.finish()
    }

    /// A channel closed while the server was not stopping: say so and stop the rest.
    private func watch(_ channel: any Channel) {
        channel.closeFuture.whenComplete { [self] _ in
            guard !latch.isStopping else { return }
            logger.error("a listening channel closed by itself; stopping", metadata: ["address": "\(String(describing: channel.localAddress))"])
            Task { await stop() }
        }
    }

    public var statistics: Statistics { stats.withLockedValue { $0 } }

    /// TCP connections open now.
    public var openTCPConnections: Int { openTCP.withLockedValue { $0 } }
}

final class ResponderHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    private let responder: ProbeResponder
    private var limiter: SourceRateLimiter
    private let logger: Logger
    private let stats: NIOLockedValueBox<ProbeServer.Statistics>

    init(responder: ProbeResponder, limiter: SourceRateLimiter, logger: Logger, stats: NIOLockedValueBox<ProbeServer.Statistics>) {
        self.responder = responder
        self.limiter = limiter
        self.logger = logger
        self.stats = stats
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        let source = envelope.remoteAddress
        let sourceKey: [UInt8] = switch source {
        case .v4(let a): withUnsafeBytes(of: a.address.sin_addr) { Array($0) }
        case .v6(let a): withUnsafeBytes(of: a.address.sin6_addr) { Array($0) }
        default: []
        }
        guard limiter.allow(source: sourceKey, nowNanos: NIODeadline.now().uptimeNanoseconds) else {
            stats.withLockedValue { $0.rateLimited += 1 }
            return
        }
        let bytes = Array(envelope.data.readableBytesView)
        let outcome = responder.respond(to: bytes, source: sourceKey, transport: .udp)
        stats.withLockedValue { $0.counts[outcome.disposition, default: 0] += 1 }
        if logger.logLevel <= .trace {
            logger.trace("query", metadata: ["from": "\(source)", "bytes": "\(bytes.count)",
                                             "disposition": "\(outcome.disposition.rawValue)"])
        }
        guard let response = outcome.response else { return }
        let buffer = context.channel.allocator.buffer(bytes: response)
        context.write(wrapOutboundOut(AddressedEnvelope(remoteAddress: source, data: buffer)), promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        // The answers to one batch of reads leave together (one sendmmsg).
        context.flush()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A datagram socket error (e.g. ICMP unreachable reported back) concerns one peer, not the server.
        logger.debug("socket error", metadata: ["error": "\(error)"])
    }
}
