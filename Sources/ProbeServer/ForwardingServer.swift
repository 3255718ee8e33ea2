import DNSWire
public import Logging
public import NIOCore
import NIOPosix
import NIOConcurrencyHelpers

/// How many client flows the UDP relay keeps and for how long (`serve --forward`).
public struct ForwardLimits: Sendable, Hashable {
    /// Client addresses (ip and port) with an upstream socket at once, per listen address. A
    /// resolver that picks a new source port for every query (unbound, BIND, RFC 5452 9.2) makes a
    /// flow per query; when the table is full the flow idle the longest is closed.
    public var maxFlows: Int
    /// A flow with no datagram either way for this long is closed. It must be longer than the
    /// longest a tunnel server holds a query before answering (iodined's lazy mode holds one up to
    /// the client's `-I` interval, 4 s by default; dnstt-server and MasterDnsVPN under a second).
    public var flowIdleTimeout: TimeAmount

    /// 1024 flows (each is one socket), 10 s idle.
    public static let standard = ForwardLimits(maxFlows: 1024, flowIdleTimeout: .seconds(10))

    public init(maxFlows: Int, flowIdleTimeout: TimeAmount) {
        self.maxFlows = maxFlows
        self.flowIdleTimeout = flowIdleTimeout
    }
}

/// `serve --forward`: the probe responder in front of the tunnel server the user already runs, on
/// the one port 53 of their one delegation.
///
/// Every query is read by the responder; the answer goes out only when the query is an
/// authenticated probe (its meta block's HMAC verified under the key: `ProbeResponder.authenticated`)
/// or the apex SOA (`answeredByForwarder`). Everything else (the tunnel's own queries, the apex, names under the zone that merely look like
/// probes, anything that does not parse) is relayed byte for byte to `upstream`, and the upstream's
/// answers are relayed back byte for byte:
/// - UDP: one upstream socket per client address and port (a flow), so each answer goes back to
///   the client that asked, from the address and port it asked; flows are bounded (`ForwardLimits`).
/// - TCP (RFC 7766): per client connection, messages are read by their 2-byte length; probes are
///   answered on the connection, every other message goes to one upstream connection opened for this
///   client connection, and the upstream's messages come back whole, so the two never interleave
///   inside a message (answers may be out of order, as RFC 7766 6.2.1.1 allows, matched by ID).
///
/// The upstream sees the relay's address, not the client's: the client's source is not kept
/// (README "Measuring through your own tunnel server" says what this means for each engine).
public final class ForwardingServer: Sendable {
    public struct Statistics: Sendable, CustomStringConvertible {
        /// Probes answered, by what they were.
        public var answered: [ProbeResponder.Disposition: Int] = [:]
        /// Probes not answered because their source was over `--rate-limit`.
        public var rateLimited = 0
        /// UDP datagrams relayed to the upstream and back.
        public var forwardedUp = 0
        public var forwardedDown = 0
        /// Upstream sockets opened, closed for idleness, closed to make room, and datagrams lost
        /// because a socket could not be opened or written.
        public var flowsOpened = 0
        public var flowsExpired = 0
        public var flowsEvicted = 0
        public var upstreamFailures = 0
        /// TCP connections admitted and turned away, messages answered and relayed each way,
        /// connections whose upstream connection failed, and connections closed by a timeout.
        public var tcpConnections = 0
        public var tcpRefused = 0
        public var tcpForwardedUp = 0
        public var tcpForwardedDown = 0
        public var tcpUpstreamFailures = 0
        public var tcpTimedOut = 0

        public var description: String {
            let parts = ProbeResponder.Disposition.allCases.compactMap { d in answered[d].map { "\(d.rawValue)=\($0)" } }
            return (parts + ["rateLimited=\(rateLimited)", "forwardedUp=\(forwardedUp)", "forwardedDown=\(forwardedDown)",
                             "flowsOpened=\(flowsOpened)", "flowsExpired=\(flowsExpired)", "flowsEvicted=\(flowsEvicted)",
                             "upstreamFailures=\(upstreamFailures)", "tcpConnections=\(tcpConnections)",
                             "tcpRefused=\(tcpRefused)", "tcpForwardedUp=\(tcpForwardedUp)",
                             "tcpForwardedDown=\(tcpForwardedDown)", "tcpUpstreamFailures=\(tcpUpstreamFailures)",
                             "tcpTimedOut=\(tcpTimedOut)"])
                .joined(separator: " ")
        }
    }

    private let responder: ProbeResponder
    private let upstream: SocketAddress
    private let rateLimit: Double
    private let tcpLimits: TCPLimits
    private let limits: ForwardLimits
    private let openTCP = NIOLockedValueBox(0)
    private let logger: Logger
    private let group: MultiThreadedEventLoopGroup
    private let channels = NIOLockedValueBox<[any Channel]>([])
    private let stats = NIOLockedValueBox(Statistics())
    private let latch = StopLatch()

    public init(responder: ProbeResponder, upstream: SocketAddress, ratePerSourcePerSecond: Double, threads: Int = 1,
                tcp: TCPLimits = .standard, limits: ForwardLimits = .standard, logger: Logger) {
        self.responder = responder
        self.upstream = upstream
        self.rateLimit = ratePerSourcePerSecond
        self.tcpLimits = tcp
        self.limits = limits
        self.logger = logger
        self.group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, threads))
    }

    /// Binds every address, UDP and TCP on the same port; returns the bound addresses.
    public func start(listen addresses: [SocketAddress]) async throws -> [SocketAddress] {
        var bound: [SocketAddress] = []
        for address in addresses {
            let (udp, tcp, local) = try await bindUDPAndTCP(address, udp: bindUDP, tcp: bindTCP)
            channels.withLockedValue { $0 += [udp, tcp] }
            bound.append(local)
            logger.info("listening", metadata: ["address": "\(local)", "transports": "udp tcp", "forward": "\(upstream)"])
        }
        return bound
    }

    private func bindUDP(_ address: SocketAddress) async throws -> any Channel {
        let make: @Sendable () -> ForwardingDatagramHandler = { [responder, upstream, rateLimit, limits, logger, stats] in
            ForwardingDatagramHandler(responder: responder, upstream: upstream,
                                      limiter: SourceRateLimiter(ratePerSecond: rateLimit), limits: limits,
                                      logger: logger, stats: stats)
        }
        return try await DatagramBootstrap(group: group)
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            .channelOption(.socketOption(.so_rcvbuf), value: 4 << 20)
            .channelOption(.socketOption(.so_sndbuf), value: 4 << 20)
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 65_536))
            .channelOption(.maxMessagesPerRead, value: 16)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(make()) }
            }
            .bind(to: address).get()
    }

    private func bindTCP(_ address: SocketAddress) async throws -> any Channel {
        let make: @Sendable () -> ForwardingTCPHandler = { [responder, upstream, tcpLimits, openTCP, stats, logger] in
            ForwardingTCPHandler(responder: responder, upstream: upstream, limits: tcpLimits, open: openTCP,
                                 stats: stats, logger: logger)
        }
        return try await listenTCP(group: group, address: address, make: make)
    }

    /// Returns when `stop()` has finished (not when the channels' close futures complete: see
    /// `StopLatch`).
    public func wait() async throws {
        await latch.wait()
    }

    /// Closes the listening channels (a datagram channel's flows close with it) and then the
    /// event loops; open TCP connections are closed by the loops' shutdown. Idempotent.
    public func stop() async {
        guard latch.begin() else { return await latch.wait() }
        for channel in channels.withLockedValue({ $0 }) { try? await channel.close() }
        try? await group.shutdownGracefully()
        latch.finish()
    }

    public var statistics: Statistics { stats.withLockedValue { $0 } }
}

extension ProbeResponder.Outcome {
    /// Whether `serve --forward` answers `query` itself: an authenticated probe, and the zone's SOA
    /// at the apex (every zone has one, RFC 1035 4.3.4; iodined, measured in the lab, drops the
    /// question, and `scan` asks it to see that the delegation reaches this host). Everything
    /// else, the apex NS included, is the tunnel server's to answer.
    func answeredByForwarder(query: [UInt8]) -> Bool {
        if ProbeResponder.authenticated.contains(disposition) { return true }
        guard disposition == .apex, let parsed = try? DNSMessage(parsing: query) else { return false }
        return parsed.questions.first?.type == .soa
    }
}

extension SocketAddress {
    /// The 4 or 16 address bytes (the rate limiter's and the leak zone's key), empty for others.
    var addressBytes: [UInt8] {
        switch self {
        case .v4(let a): withUnsafeBytes(of: a.address.sin_addr) { Array($0) }
        case .v6(let a): withUnsafeBytes(of: a.address.sin6_addr) { Array($0) }
        default: []
        }
    }
}

// MARK: - UDP

/// One client address and port, with its own upstream socket. Used on one event loop only.
final class ForwardFlow: @unchecked Sendable {
    let client: SocketAddress
    var channel: (any Channel)?
    /// Queries that arrived while the upstream socket was being opened.
    var pending: [ByteBuffer] = []
    var lastActive: UInt64
    var closed = false

    init(client: SocketAddress, now: UInt64) {
        self.client = client
        self.lastActive = now
    }
}

/// The listening datagram channel of `serve --forward`: answers probes, relays the rest through
/// per-client flows. Its state lives on its channel's event loop; the flows' channels are made on
/// the same loop, so nothing here needs a lock but the shared statistics.
final class ForwardingDatagramHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    private let responder: ProbeResponder
    private let upstream: SocketAddress
    private var limiter: SourceRateLimiter
    private let limits: ForwardLimits
    private let logger: Logger
    private let stats: NIOLockedValueBox<ForwardingServer.Statistics>
    private var flows: [SocketAddress: ForwardFlow] = [:]
    private var sweeper: RepeatedTask?
    private var listen: (any Channel)?

    init(responder: ProbeResponder, upstream: SocketAddress, limiter: SourceRateLimiter, limits: ForwardLimits,
         logger: Logger, stats: NIOLockedValueBox<ForwardingServer.Statistics>) {
        self.responder = responder
        self.upstream = upstream
        self.limiter = limiter
        self.limits = limits
        self.logger = logger
        self.stats = stats
    }

    func handlerAdded(context: ChannelHandlerContext) {
        listen = context.channel
        let period = TimeAmount.nanoseconds(max(limits.flowIdleTimeout.nanoseconds / 4, 100_000_000))
        sweeper = context.eventLoop.scheduleRepeatedTask(initialDelay: period, delay: period) { [weak self] _ in
            self?.sweep()
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        sweeper?.cancel()
        sweeper = nil
        for flow in flows.values { close(flow) }
        flows = [:]
        listen = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        let source = envelope.remoteAddress
        let bytes = Array(envelope.data.readableBytesView)
        let outcome = responder.respond(to: bytes, source: source.addressBytes, transport: .udp)
        if outcome.answeredByForwarder(query: bytes) {
            guard limiter.allow(source: source.addressBytes, nowNanos: NIODeadline.now().uptimeNanoseconds) else {
                stats.withLockedValue { $0.rateLimited += 1 }
                return
            }
            stats.withLockedValue { $0.answered[outcome.disposition, default: 0] += 1 }
            guard let response = outcome.response else { return }
            context.write(wrapOutboundOut(AddressedEnvelope(remoteAddress: source, data: context.channel.allocator.buffer(bytes: response))),
                          promise: nil)
            return
        }
        forward(envelope.data, from: source, context: context)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        logger.debug("socket error", metadata: ["error": "\(error)"])
    }

    private func forward(_ payload: ByteBuffer, from client: SocketAddress, context: ChannelHandlerContext) {
        let now = NIODeadline.now().uptimeNanoseconds
        if let flow = flows[client] {
            flow.lastActive = now
            send(payload, on: flow)
            return
        }
        if flows.count >= limits.maxFlows, let oldest = flows.values.min(by: { $0.lastActive < $1.lastActive }) {
            flows[oldest.client] = nil
            close(oldest)
            stats.withLockedValue { $0.flowsEvicted += 1 }
        }
        let flow = ForwardFlow(client: client, now: now)
        flows[client] = flow
        // The datagram was read into the large receive buffer: keep a copy of its own while the socket opens.
        flow.pending.append(ByteBuffer(bytes: payload.readableBytesView))
        stats.withLockedValue { $0.flowsOpened += 1 }
        let loop = context.eventLoop
        let upstream = self.upstream
        let stats = self.stats
        let listen = context.channel
        let wildcard = upstream.protocol == .inet6 ? "::" : "0.0.0.0"
        DatagramBootstrap(group: loop)
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 65_536))
            .channelOption(.maxMessagesPerRead, value: 16)
            .channelOption(.socketOption(.so_rcvbuf), value: 1 << 20)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ForwardFlowHandler(flow: flow, upstream: upstream,
                                                                                        listen: listen, stats: stats))
                }
            }
            .bind(host: wildcard, port: 0)
            .hop(to: loop)
            .assumeIsolated()
            .whenComplete { [weak self] result in
                switch result {
                case .success(let channel):
                    guard let self, !flow.closed, self.flows[client] === flow else {
                        channel.close(promise: nil)
                        return
                    }
                    flow.channel = channel
                    let queued = flow.pending
                    flow.pending = []
                    for payload in queued { self.send(payload, on: flow) }
                case .failure(let error):
                    stats.withLockedValue { $0.upstreamFailures += flow.pending.count }
                    flow.pending = []
                    self?.flows[client] = nil
                    self?.logger.debug("cannot open an upstream socket", metadata: ["error": "\(error)"])
                }
            }
    }

    private func send(_ payload: ByteBuffer, on flow: ForwardFlow) {
        guard let channel = flow.channel else {
            flow.pending.append(ByteBuffer(bytes: payload.readableBytesView))
            return
        }
        let stats = self.stats
        stats.withLockedValue { $0.forwardedUp += 1 }
        channel.writeAndFlush(AddressedEnvelope(remoteAddress: upstream, data: payload)).whenFailure { _ in
            stats.withLockedValue { $0.upstreamFailures += 1 }
        }
    }

    private func close(_ flow: ForwardFlow) {
        flow.closed = true
        flow.pending = []
        flow.channel?.close(promise: nil)
        flow.channel = nil
    }

    /// Closes the flows idle longer than the limit.
    private func sweep() {
        let now = NIODeadline.now().uptimeNanoseconds
        let idle = UInt64(max(0, limits.flowIdleTimeout.nanoseconds))
        let expired = flows.values.filter { now &- $0.lastActive > idle }
        guard !expired.isEmpty else { return }
        for flow in expired {
            flows[flow.client] = nil
            close(flow)
        }
        stats.withLockedValue { $0.flowsExpired += expired.count }
    }
}

/// A flow's upstream socket: what the upstream sends back goes out of the listening channel to the
/// flow's client, unchanged.
final class ForwardFlowHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    private let flow: ForwardFlow
    private let upstream: SocketAddress
    private let listen: any Channel
    private let stats: NIOLockedValueBox<ForwardingServer.Statistics>

    init(flow: ForwardFlow, upstream: SocketAddress, listen: any Channel, stats: NIOLockedValueBox<ForwardingServer.Statistics>) {
        self.flow = flow
        self.upstream = upstream
        self.listen = listen
        self.stats = stats
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        // Only the upstream's datagrams are relayed: anything else reaching this port is not an answer.
        guard envelope.remoteAddress == upstream, !flow.closed else { return }
        flow.lastActive = NIODeadline.now().uptimeNanoseconds
        stats.withLockedValue { $0.forwardedDown += 1 }
        listen.write(AddressedEnvelope(remoteAddress: flow.client, data: envelope.data), promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        listen.flush()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // ICMP port unreachable from a stopped upstream arrives here; the flow stays, the next query retries.
        stats.withLockedValue { $0.upstreamFailures += 1 }
    }
}

// MARK: - TCP

/// One client connection of `serve --forward` over TCP: probes answered here, every other message
/// relayed to a per-connection upstream connection (see `ForwardingServer`).
final class ForwardingTCPHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let responder: ProbeResponder
    private let upstream: SocketAddress
    private let limits: TCPLimits
    private let open: NIOLockedValueBox<Int>
    private let stats: NIOLockedValueBox<ForwardingServer.Statistics>
    private let logger: Logger
    private var pending: ByteBuffer?
    private var counted = false
    private var idleTimer: Scheduled<Void>?
    private var readTimer: Scheduled<Void>?
    private var upstreamChannel: (any Channel)?
    private var upstreamOpening = false
    private var upstreamQueue: [ByteBuffer] = []
    private var closed = false
    private var lastWrite: EventLoopFuture<Void>?
    private var inputClosed = false

    init(responder: ProbeResponder, upstream: SocketAddress, limits: TCPLimits, open: NIOLockedValueBox<Int>,
         stats: NIOLockedValueBox<ForwardingServer.Statistics>, logger: Logger) {
        self.responder = responder
        self.upstream = upstream
        self.limits = limits
        self.open = open
        self.stats = stats
        self.logger = logger
    }

    func channelActive(context: ChannelHandlerContext) {
        let admitted = open.withLockedValue { count -> Bool in
            guard count < limits.maxConnections else { return false }
            count += 1
            return true
        }
        guard admitted else {
            stats.withLockedValue { $0.tcpRefused += 1 }
            context.close(promise: nil)
            return
        }
        counted = true
        stats.withLockedValue { $0.tcpConnections += 1 }
        armIdle(context.channel)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        closed = true
        idleTimer?.cancel()
        readTimer?.cancel()
        upstreamQueue = []
        upstreamChannel?.close(promise: nil)
        upstreamChannel = nil
        if counted {
            counted = false
            open.withLockedValue { $0 -= 1 }
        }
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var incoming = unwrapInboundIn(data)
        if pending == nil {
            pending = incoming
        } else {
            pending!.writeBuffer(&incoming)
        }
        var complete = false
        while var buffer = pending, let length = buffer.getInteger(at: buffer.readerIndex, as: UInt16.self),
              buffer.readableBytes >= 2 + Int(length) {
            let frame = buffer.readSlice(length: 2 + Int(length))!
            pending = buffer.readableBytes == 0 ? nil : buffer
            complete = true
            handle(frame, context: context)
        }
        if complete { armIdle(context.channel) }
        if pending != nil {
            if readTimer == nil { armRead(context.channel) }
        } else {
            readTimer?.cancel()
            readTimer = nil
        }
    }

    /// One whole message with its length prefix.
    private func handle(_ frame: ByteBuffer, context: ChannelHandlerContext) {
        let query = Array(frame.readableBytesView.dropFirst(2))
        let outcome = responder.respond(to: query, source: context.remoteAddress?.addressBytes ?? [], transport: .tcp)
        if outcome.answeredByForwarder(query: query) {
            stats.withLockedValue { $0.answered[outcome.disposition, default: 0] += 1 }
            guard let response = outcome.response, response.count <= Int(UInt16.max) else { return }
            var out = context.channel.allocator.buffer(capacity: 2 + response.count)
            out.writeInteger(UInt16(response.count))
            out.writeBytes(response)
            let promise = context.eventLoop.makePromise(of: Void.self)
            context.write(wrapOutboundOut(out), promise: promise)
            lastWrite = promise.futureResult
            return
        }
        stats.withLockedValue { $0.tcpForwardedUp += 1 }
        let copy = ByteBuffer(bytes: frame.readableBytesView)
        if let upstreamChannel {
            upstreamChannel.writeAndFlush(copy, promise: nil)
            return
        }
        upstreamQueue.append(copy)
        guard !upstreamOpening else { return }
        upstreamOpening = true
        let client = context.channel
        let stats = self.stats
        ClientBootstrap(group: context.eventLoop)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connectTimeout(.seconds(5))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ForwardTCPUpstreamHandler(client: client, stats: stats))
                }
            }
            .connect(to: upstream)
            .hop(to: context.eventLoop)
            .assumeIsolated()
            .whenComplete { [self] result in
                upstreamOpening = false
                switch result {
                case .success(let channel):
                    guard !closed else {
                        channel.close(promise: nil)
                        return
                    }
                    upstreamChannel = channel
                    for message in upstreamQueue { channel.write(message, promise: nil) }
                    upstreamQueue = []
                    channel.flush()
                    if inputClosed { channel.close(mode: .output, promise: nil) }
                case .failure(let error):
                    // The tunnel server takes no TCP, or is down: the client sees the connection end,
                    // as it would talking to that server directly.
                    stats.withLockedValue { $0.tcpUpstreamFailures += 1 }
                    logger.debug("upstream TCP connection failed", metadata: ["error": "\(error)"])
                    upstreamQueue = []
                    client.close(promise: nil)
                }
            }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            // The client sent its last message: pass the half-close on, so the upstream answers and closes.
            inputClosed = true
            context.flush()
            if let upstreamChannel {
                upstreamChannel.close(mode: .output, promise: nil)
            } else if !upstreamOpening {
                // Only probes on this connection: close once their answers are written.
                if let lastWrite {
                    lastWrite.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
                } else {
                    context.close(promise: nil)
                }
            }
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        logger.debug("tcp connection error", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }

    private func armIdle(_ channel: any Channel) {
        idleTimer?.cancel()
        let stats = self.stats
        idleTimer = channel.eventLoop.scheduleTask(in: limits.idleTimeout) {
            stats.withLockedValue { $0.tcpTimedOut += 1 }
            channel.close(promise: nil)
        }
    }

    private func armRead(_ channel: any Channel) {
        let stats = self.stats
        readTimer = channel.eventLoop.scheduleTask(in: limits.readTimeout) {
            stats.withLockedValue { $0.tcpTimedOut += 1 }
            channel.close(promise: nil)
        }
    }
}

/// The upstream side of one forwarded TCP connection: the upstream's messages go back to the
/// client whole (never interleaved with the responder's own answers inside a message).
final class ForwardTCPUpstreamHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer

    private let client: any Channel
    private let stats: NIOLockedValueBox<ForwardingServer.Statistics>
    private var pending: ByteBuffer?

    init(client: any Channel, stats: NIOLockedValueBox<ForwardingServer.Statistics>) {
        self.client = client
        self.stats = stats
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var incoming = unwrapInboundIn(data)
        if pending == nil {
            pending = incoming
        } else {
            pending!.writeBuffer(&incoming)
        }
        while var buffer = pending, let length = buffer.getInteger(at: buffer.readerIndex, as: UInt16.self),
              buffer.readableBytes >= 2 + Int(length) {
            let frame = buffer.readSlice(length: 2 + Int(length))!
            pending = buffer.readableBytes == 0 ? nil : buffer
            stats.withLockedValue { $0.tcpForwardedDown += 1 }
            client.write(frame, promise: nil)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        client.flush()
    }

    func channelInactive(context: ChannelHandlerContext) {
        // The upstream closed: so does the client's connection, once what was relayed is written.
        client.writeAndFlush(ByteBuffer()).whenComplete { [client] _ in client.close(promise: nil) }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
