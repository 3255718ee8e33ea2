public import NIOCore
public import NIOPosix
import NIOConcurrencyHelpers

/// What came back for one query.
public enum QueryResult: Sendable {
    /// The response datagram and the round-trip time in nanoseconds.
    case response([UInt8], rttNanos: UInt64)
    case timeout
    case sendFailed(String)
}

/// Sends DNS queries to many resolvers over shared UDP sockets and matches responses to their queries
/// by resolver address, port and DNS id. Any number of queries may be in flight; the caller bounds it.
public final class QueryEngine: Sendable {
    private let group: MultiThreadedEventLoopGroup
    private let ownsGroup: Bool
    private let v4 = NIOLockedValueBox<(any Channel)?>(nil)
    private let v6 = NIOLockedValueBox<(any Channel)?>(nil)
    private let seed: UInt64
    private let counters = NIOLockedValueBox(Counters())

    public struct Counters: Sendable {
        public var sent = 0
        public var answered = 0
        public var timedOut = 0
        /// Responses that matched no query in flight (arrived after their timeout, or were duplicated).
        public var unmatched = 0
    }

    public init(seed: UInt64, group: MultiThreadedEventLoopGroup? = nil) {
        self.seed = seed
        self.group = group ?? MultiThreadedEventLoopGroup(numberOfThreads: 1)
        self.ownsGroup = group == nil
    }

    public var counts: Counters { counters.withLockedValue { $0 } }

    private func channel(for v6: Bool) async throws -> any Channel {
        let slot = v6 ? self.v6 : self.v4
        if let existing = slot.withLockedValue({ $0 }) { return existing }
        let dispatcher = Dispatcher(seed: seed ^ (v6 ? 0x9E37_79B9_7F4A_7C15 : 0), counters: counters)
        let channel = try await DatagramBootstrap(group: group)
            .channelOption(.socketOption(.so_rcvbuf), value: 4 << 20)
            // NIO reads datagrams into 2048-byte buffers by default, which would cut large responses.
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 65_536))
            .channelOption(.socketOption(.so_sndbuf), value: 4 << 20)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(dispatcher) }
            }
            .bind(host: v6 ? "::" : "0.0.0.0", port: 0).get()
        return slot.withLockedValue { current in
            if let current { channel.close(promise: nil); return current }
            current = channel
            return channel
        }
    }

    /// Sends `query` (its first two bytes, the DNS id, are replaced by a free id) and waits for the answer.
    public func query(_ query: [UInt8], to address: SocketAddress, timeout: TimeAmount) async -> QueryResult {
        let isV6: Bool
        switch address {
        case .v6: isV6 = true
        default: isV6 = false
        }
        let channel: any Channel
        do {
            channel = try await self.channel(for: isV6)
        } catch {
            return .sendFailed("cannot open a UDP socket: \(error)")
        }
        let request = Dispatcher.Request(bytes: query, address: address, timeout: timeout)
        let promise = channel.eventLoop.makePromise(of: QueryResult.self)
        channel.pipeline.triggerUserOutboundEvent(Dispatcher.Send(request: request, promise: promise), promise: nil)
        return (try? await promise.futureResult.get()) ?? .sendFailed("channel closed")
    }

    public func shutdown() async {
        for slot in [v4, v6] {
            if let c = slot.withLockedValue({ $0 }) { try? await c.close() }
        }
        if ownsGroup { try? await group.shutdownGracefully() }
    }
}

/// Lives on the channel's event loop: owns the table of queries in flight.
final class Dispatcher: ChannelDuplexHandler, @unchecked Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    struct Request {
        var bytes: [UInt8]
        var address: SocketAddress
        var timeout: TimeAmount
    }

    struct Send {
        var request: Request
        var promise: EventLoopPromise<QueryResult>
    }

    struct Key: Hashable {
        var address: SocketAddress
        var id: UInt16
    }

    struct Pending {
        var promise: EventLoopPromise<QueryResult>
        var sentAt: NIODeadline
        var timer: Scheduled<Void>
    }

    private var pending: [Key: Pending] = [:]
    private var rng: SplitMix64
    private let counters: NIOLockedValueBox<QueryEngine.Counters>

    init(seed: UInt64, counters: NIOLockedValueBox<QueryEngine.Counters>) {
        self.rng = SplitMix64(seed: seed)
        self.counters = counters
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard let send = event as? Send else {
            context.triggerUserOutboundEvent(event, promise: promise)
            return
        }
        var bytes = send.request.bytes
        guard bytes.count >= 12 else {
            send.promise.succeed(.sendFailed("query shorter than a DNS header"))
            return
        }
        // A random id that is not in flight to this resolver (RFC 5452: ids must be unpredictable).
        var key = Key(address: send.request.address, id: 0)
        repeat { key.id = UInt16(truncatingIfNeeded: rng.next()) } while pending[key] != nil
        let chosen = key
        bytes[0] = UInt8(key.id >> 8)
        bytes[1] = UInt8(key.id & 0xFF)
        let loop = context.eventLoop
        let timer = loop.scheduleTask(in: send.request.timeout) { [weak self] in
            guard let self, let entry = self.pending.removeValue(forKey: chosen) else { return }
            self.counters.withLockedValue { $0.timedOut += 1 }
            entry.promise.succeed(.timeout)
        }
        pending[chosen] = Pending(promise: send.promise, sentAt: .now(), timer: timer)
        counters.withLockedValue { $0.sent += 1 }
        let envelope = AddressedEnvelope(remoteAddress: send.request.address, data: context.channel.allocator.buffer(bytes: bytes))
        let writePromise = loop.makePromise(of: Void.self)
        writePromise.futureResult.whenFailure { [weak self] error in
            guard let self, let entry = self.pending.removeValue(forKey: chosen) else { return }
            entry.timer.cancel()
            entry.promise.succeed(.sendFailed("\(error)"))
        }
        context.writeAndFlush(wrapOutboundOut(envelope), promise: writePromise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        let view = envelope.data.readableBytesView
        guard view.count >= 12 else { return }
        let id = UInt16(view[view.startIndex]) << 8 | UInt16(view[view.startIndex + 1])
        guard let entry = pending.removeValue(forKey: Key(address: envelope.remoteAddress, id: id)) else {
            counters.withLockedValue { $0.unmatched += 1 }
            return
        }
        entry.timer.cancel()
        counters.withLockedValue { $0.answered += 1 }
        let rtt = UInt64(max(0, (NIODeadline.now() - entry.sentAt).nanoseconds))
        entry.promise.succeed(.response(Array(view), rttNanos: rtt))
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // ICMP errors on an unconnected UDP socket cannot be tied to one query; the query times out.
    }
}

/// A small seeded generator (SplitMix64): every random choice of a run is reproducible from its seed.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
