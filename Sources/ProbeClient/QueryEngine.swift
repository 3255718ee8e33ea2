import Base
import OSLayer
public import NIOCore
public import NIOPosix
import NIOConcurrencyHelpers
import DequeModule

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
    /// The loop every socket of this engine lives on: answers are read and queries completed here.
    private let loop: any EventLoop
    /// Runs tasks on that loop (`withTaskExecutorPreference`), so a caller waiting for answers is
    /// resumed where they are read.
    public let taskExecutor: EventLoopTaskExecutor
    private let v4 = NIOLockedValueBox<Socket?>(nil)
    private let v6 = NIOLockedValueBox<Socket?>(nil)
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
        self.loop = self.group.next()
        self.taskExecutor = EventLoopTaskExecutor(self.loop)
    }

    public var counts: Counters { counters.withLockedValue { $0 } }

    /// One UDP socket per address family and the dispatcher that owns its queries.
    private struct Socket: Sendable {
        var channel: any Channel
        var dispatcher: Dispatcher
    }

    private func socket(for v6: Bool) async throws -> Socket {
        let slot = v6 ? self.v6 : self.v4
        // A socket that a send error closed (NIO closes a datagram channel on some errors) is replaced.
        if let existing = slot.withLockedValue({ $0 }), existing.channel.isActive { return existing }
        // The socket is opened here, not by NIO: the dispatcher sends through its own descriptor (a
        // duplicate of the one NIO watches) with one sendmmsg per flush and reads the queue with
        // recvmmsg (`DatagramPort`). A literal wildcard address, not a host to resolve: with a global
        // IPv6 address on the host, resolving "0.0.0.0" gives the v4-mapped ::ffff:0.0.0.0 on an
        // IPv6 socket, whose answers then come from ::ffff:a.b.c.d and match no query sent to a.b.c.d.
        let (fd, port) = try DatagramPort.open(ipv6: v6, bufferBytes: 4 << 20)
        let dispatcher = Dispatcher(seed: seed ^ (v6 ? 0x9E37_79B9_7F4A_7C15 : 0), counters: counters, port: port)
        let channel = try await DatagramBootstrap(group: loop)
            // NIO reads datagrams into 2048-byte buffers by default, which would cut large responses.
            // (Reading 16 per recvmmsg with 16 x 65,536-byte slices through NIO was tried for issue
            // 27: the closed loop fell from 63k to 39k answers/s; the dispatcher's own recvmmsg
            // reads into slots allocated once.)
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 65_536))
            .channelOption(.maxMessagesPerRead, value: 16)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(dispatcher) }
            }
            .withBoundSocket(fd).get()
        return slot.withLockedValue { current in
            if let current, current.channel.isActive { channel.close(promise: nil); return current }
            let socket = Socket(channel: channel, dispatcher: dispatcher)
            current = socket
            return socket
        }
    }

    /// Sends `query` (its first two bytes, the DNS id, are replaced by a free id) and waits for the answer.
    public func query(_ query: [UInt8], to address: SocketAddress, timeout: TimeAmount) async -> QueryResult {
        let socket: Socket
        do {
            socket = try await self.socket(for: address.isV6)
        } catch {
            return .sendFailed("cannot open a UDP socket: \(error)")
        }
        let promise = socket.channel.eventLoop.makePromise(of: QueryResult.self)
        let request = Dispatcher.Request(bytes: query, address: address, timeout: timeout) { promise.succeed($0) }
        socket.dispatcher.submit(request, on: socket.channel.eventLoop)
        return (try? await promise.futureResult.get()) ?? .sendFailed("channel closed")
    }

    /// The same exchange without a task hop: `completion` runs on the engine's event loop, which is
    /// where a closed-loop caller should send its next query from. Only the first send of a socket
    /// family waits for the socket to open.
    public func send(_ query: [UInt8], to address: SocketAddress, timeout: TimeAmount,
                     completion: @escaping @Sendable (QueryResult) -> Void) {
        let request = Dispatcher.Request(bytes: query, address: address, timeout: timeout, completion: completion)
        if let socket = (address.isV6 ? v6 : v4).withLockedValue({ $0 }) {
            socket.dispatcher.submit(request, on: socket.channel.eventLoop)
            return
        }
        Task {
            do {
                let socket = try await self.socket(for: address.isV6)
                socket.dispatcher.submit(request, on: socket.channel.eventLoop)
            } catch {
                completion(.sendFailed("cannot open a UDP socket: \(error)"))
            }
        }
    }

    /// Expiry records the IPv4 socket's table holds, answered queries' included (tests: the table
    /// stays about as long as the queries in flight).
    func heldExpiries() async -> Int {
        guard let socket = v4.withLockedValue({ $0 }) else { return 0 }
        return (try? await socket.channel.eventLoop.submit { socket.dispatcher.expiryCount }.get()) ?? 0
    }

    public func shutdown() async {
        for slot in [v4, v6] {
            if let socket = slot.withLockedValue({ $0 }) { try? await socket.channel.close() }
        }
        if ownsGroup { try? await group.shutdownGracefully() }
    }
}

extension SocketAddress {
    /// "192.0.2.1:53" or "[2001:db8::1]:53".
    var describedHost: String {
        let host = ipAddress ?? "?"
        return isV6 ? "[\(host)]:\(port ?? 0)" : "\(host):\(port ?? 0)"
    }

    var isV6: Bool {
        if case .v6 = self { return true }
        return false
    }
}

/// Lives on the channel's event loop: owns the table of queries in flight.
///
/// Four things keep its cost per query close to a bare sender's: timeouts are checked by one sweep
/// timer over deadline-ordered queues instead of a timer per query; queries that arrive in one
/// event-loop tick share one flush, one `sendmmsg` on the dispatcher's own descriptor (`DatagramPort`,
/// no buffer, promise or pipeline event per query); after NIO reads the first answer of a
/// readiness event, the rest are read here with `recvmmsg`; queries are keyed by the peer's raw
/// address (`DatagramPeer`), not by a `SocketAddress`, whose hash cost more than the lookup.
final class Dispatcher: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    struct Request: @unchecked Sendable {
        var bytes: [UInt8]
        var address: SocketAddress
        var timeout: TimeAmount
        var completion: (QueryResult) -> Void
    }

    struct Key: Hashable {
        var peer: DatagramPeer
        var id: UInt16
    }

    struct Pending {
        var completion: (QueryResult) -> Void
        var sentAt: NIODeadline
        /// Which expiry queue holds this query's deadline.
        var timeout: TimeAmount
        /// Distinguishes this query from a later one that reuses the key after it ended.
        var serial: UInt64
    }

    /// Deadlines of one timeout value, in send order, hence also in deadline order.
    struct Expiry {
        var deadline: NIODeadline
        var key: Key
        var serial: UInt64
    }

    /// How often the sweep looks for expired queries: the resolution of every timeout.
    static let sweepInterval = TimeAmount.milliseconds(10)

    private var pending: [Key: Pending] = [:]
    /// One queue per timeout value, found by a scan (a scan uses one or two timeouts): changed in
    /// place, where a dictionary of deques mutated through `expiries[timeout]?` cost three
    /// allocations per answer (heaptrack, issue 27).
    private var expiries: [(timeout: TimeAmount, queue: Deque<Expiry>)] = []

    private func queueIndex(_ timeout: TimeAmount) -> Int? {
        expiries.firstIndex { $0.timeout == timeout }
    }

    private func appendExpiry(_ expiry: Expiry, timeout: TimeAmount) {
        if let index = queueIndex(timeout) {
            expiries[index].queue.append(expiry)
        } else {
            expiries.append((timeout, [expiry]))
        }
    }
    private var nextSerial: UInt64 = 0
    private var rng: SplitMix64
    private let counters: NIOLockedValueBox<QueryEngine.Counters>
    private var sweep: RepeatedTask?
    private var flushScheduled = false
    private var retryScheduled = false
    private var context: ChannelHandlerContext?
    /// The socket's own descriptor: queries queued here go out at the next flush.
    private let port: DatagramPort
    /// The key and address of each query queued in `port`, in the same order.
    private var queuedKeys: [(key: Key, address: SocketAddress)] = []

    init(seed: UInt64, counters: NIOLockedValueBox<QueryEngine.Counters>, port: DatagramPort) {
        self.rng = SplitMix64(seed: seed)
        self.counters = counters
        self.port = port
    }

    /// Hands a request over from any thread; `loop` is the channel's event loop. A direct call, not a
    /// pipeline event: an event is boxed as `Any` and cast back, which cost more than the send itself.
    func submit(_ request: Request, on loop: any EventLoop) {
        if loop.inEventLoop {
            send(request)
        } else {
            loop.execute { self.send(request) }
        }
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        sweep?.cancel()
        sweep = nil
        self.context = nil
        port.close()
        queuedKeys.removeAll()
        let open = pending
        pending.removeAll()
        expiries.removeAll()
        let why = lastSendError.map { "the socket closed after a send error: \($0)" } ?? "the socket closed"
        for entry in open.values { entry.completion(.sendFailed(why)) }
    }

    /// The last send error, in words a user can act on.
    private var lastSendError: String?

    /// "network unreachable (no route to [2001:db8::1]:53 from this host)" rather than NIO's call name.
    static func describe(_ error: any Error, to address: SocketAddress) -> String {
        if let io = error as? IOError {
            switch io.errnoCode {
            case 101: return "network unreachable: this host has no route to \(address.describedHost)\(address.isV6 ? " (no IPv6 connectivity?)" : "")"
            case 113: return "host unreachable: \(address.describedHost)"
            case 97: return "address family not supported: this host has no \(address.isV6 ? "IPv6" : "IPv4") stack"
            case 1, 13: return "sending to \(address.describedHost) is not permitted (a firewall rule?)"
            default: return "\(io)"
            }
        }
        return "\(error)"
    }

    /// A send the kernel refused, in the words NIO's channel gave for it: EMSGSIZE and EHOSTUNREACH
    /// as the channel errors NIO turned them into, any other errno as NIO's `IOError` for `sendmmsg`.
    static func describeSend(errno code: Int32, to address: SocketAddress) -> String {
        switch code {
        case DatagramPort.messageTooLong: "\(ChannelError.writeMessageTooLarge)"
        case DatagramPort.hostUnreachable: "\(ChannelError.writeHostUnreachable)"
        default: describe(IOError(errnoCode: code, reason: "sendmmsg"), to: address)
        }
    }

    /// Queues one query for the next flush; runs on the event loop.
    private func send(_ request: Request) {
        guard context != nil else {
            request.completion(.sendFailed("channel closed"))
            return
        }
        guard request.bytes.count >= 12 else {
            request.completion(.sendFailed("query shorter than a DNS header"))
            return
        }
        let peer: DatagramPeer
        switch request.address {
        case .v4(let address): peer = DatagramPeer(address.address)
        case .v6(let address): peer = DatagramPeer(address.address)
        default:
            request.completion(.sendFailed("\(request.address) is not an IP address"))
            return
        }
        // A random id that is not in flight to this resolver (RFC 5452: ids must be unpredictable).
        var key = Key(peer: peer, id: 0)
        repeat { key.id = UInt16(truncatingIfNeeded: rng.next()) } while pending[key] != nil
        // The id goes into the queued copy, not into the caller's array (which it still holds).
        let id = key.id
        request.bytes.withUnsafeBytes { bytes in
            request.address.withSockAddr { name, length in
                port.enqueue(bytes, name: UnsafeRawPointer(name), nameLength: UInt32(length)) { copy in
                    copy[0] = UInt8(truncatingIfNeeded: id >> 8)
                    copy[1] = UInt8(truncatingIfNeeded: id)
                }
            }
        }
        queuedKeys.append((key, request.address))
        let now = NIODeadline.now()
        nextSerial &+= 1
        pending[key] = Pending(completion: request.completion, sentAt: now, timeout: request.timeout, serial: nextSerial)
        appendExpiry(Expiry(deadline: now + request.timeout, key: key, serial: nextSerial), timeout: request.timeout)
        counters.withLockedValue { $0.sent += 1 }
        if let context {
            startSweepIfNeeded(context)
            scheduleFlush(context)
        }
    }

    /// Sends what is queued. A query the kernel refuses fails with the reason; when the socket's
    /// send buffer is full the rest is tried again 1 ms later. The completions of failed queries
    /// run last, after the queue is settled (one may queue the next query at once).
    private func flushQueue() {
        guard !queuedKeys.isEmpty else { return }
        let result = port.flush()
        let failures = result.failed.map { (queuedKeys[$0.index], $0.errno) }
        let consumed = result.sent + result.failed.count
        if consumed >= queuedKeys.count {
            queuedKeys.removeAll(keepingCapacity: true)
        } else {
            queuedKeys.removeFirst(consumed)
        }
        if result.blocked, !retryScheduled, let context {
            retryScheduled = true
            context.eventLoop.assumeIsolatedUnsafeUnchecked().scheduleTask(in: .milliseconds(1)) { [self] in
                retryScheduled = false
                flushQueue()
            }
        }
        for ((key, address), code) in failures {
            let why = Self.describeSend(errno: code, to: address)
            lastSendError = why
            guard let entry = pending.removeValue(forKey: key) else { continue }
            entry.completion(.sendFailed(why))
        }
    }

    /// One flush for every write queued before the loop gets back to this task.
    private func scheduleFlush(_ context: ChannelHandlerContext) {
        guard !flushScheduled else { return }
        flushScheduled = true
        context.eventLoop.assumeIsolatedUnsafeUnchecked().execute { [self] in
            flushScheduled = false
            flushQueue()
        }
    }

    private func startSweepIfNeeded(_ context: ChannelHandlerContext) {
        guard sweep == nil else { return }
        sweep = context.eventLoop.scheduleRepeatedTask(initialDelay: Self.sweepInterval, delay: Self.sweepInterval) {
            [self] (_: RepeatedTask) in expire()
        }
    }

    /// Ends every query past its deadline. The completions run only after the tables are settled:
    /// a completion may send the next query at once (a closed loop does), and that query's expiry
    /// must not land in a queue this sweep is about to write back.
    private func expire() {
        let now = NIODeadline.now()
        var expired: [Pending] = []
        for index in expiries.indices {
            while let head = expiries[index].queue.first, head.deadline <= now {
                expiries[index].queue.removeFirst()
                if let entry = pending[head.key], entry.serial == head.serial {
                    pending.removeValue(forKey: head.key)
                    expired.append(entry)
                }
            }
        }
        // Answered queries leave their expiry behind; drop a queue when nothing is left in it.
        expiries.removeAll { $0.queue.isEmpty }
        if !expired.isEmpty { counters.withLockedValue { $0.timedOut += expired.count } }
        for entry in expired { entry.completion(.timeout) }
        if pending.isEmpty, expiries.isEmpty {
            sweep?.cancel()
            sweep = nil
        }
    }

    /// NIO's read of the first answer of a readiness event; the answers queued behind it are read
    /// here, up to 16 per `recvmmsg`, until the queue is empty (NIO's next read then finds none).
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        let peer: DatagramPeer
        switch envelope.remoteAddress {
        case .v4(let address): peer = DatagramPeer(address.address)
        case .v6(let address): peer = DatagramPeer(address.address)
        default: return
        }
        envelope.data.withUnsafeReadableBytes { answer(to: $0, from: peer) }
        while self.context != nil, port.receive({ answer(to: $0, from: $1) }) == port.receiveSlots {}
    }

    /// Completes the query `bytes` answers, matched by the peer and the DNS id.
    private func answer(to bytes: UnsafeRawBufferPointer, from peer: DatagramPeer) {
        guard bytes.count >= 12 else { return }
        let id = UInt16(bytes[0]) << 8 | UInt16(bytes[1])
        guard let entry = pending.removeValue(forKey: Key(peer: peer, id: id)) else {
            counters.withLockedValue { $0.unmatched += 1 }
            return
        }
        counters.withLockedValue { $0.answered += 1 }
        let rtt = UInt64(max(0, (NIODeadline.now() - entry.sentAt).nanoseconds))
        dropAnsweredHead(of: entry.timeout, serial: entry.serial)
        entry.completion(.response(Array(bytes), rttNanos: rtt))
    }

    var expiryCount: Int { expiries.reduce(0) { $0 + $1.queue.count } }

    /// Drops the expiries at the head of a queue whose queries were answered. Answers mostly come
    /// in send order, so this keeps a queue about as long as the queries in flight; left for the
    /// sweep, every answered query's expiry (and the resolver address it holds) stayed for a whole
    /// timeout, which at 1,300 queries/s and 1 s was 300 kB of heap that `monitor` saw as growth.
    private func dropAnsweredHead(of timeout: TimeAmount, serial: UInt64) {
        guard let index = queueIndex(timeout) else { return }
        // Mostly the head is the query just answered: drop it without hashing its key.
        if expiries[index].queue.first?.serial == serial { expiries[index].queue.removeFirst() }
        while let head = expiries[index].queue.first {
            if let entry = pending[head.key], entry.serial == head.serial { return }
            expiries[index].queue.removeFirst()
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        // Completions of this read batch may have queued queries; send them together now.
        flushQueue()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // ICMP errors on an unconnected UDP socket cannot be tied to one query; the query times out.
    }
}
