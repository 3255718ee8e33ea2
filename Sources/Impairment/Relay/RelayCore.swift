import HeapModule
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Base

/// The relay's state, confined to one event loop (every method runs on `loop`).
final class RelayCore: @unchecked Sendable {
    let loop: any EventLoop
    let lastSummary: NIOLockedValueBox<ImpairmentSummary>

    private let config: ImpairmentConfig
    private let log: ImpairmentLog?
    private let arguments: [String]
    private var models: [DirectionImpairment]
    private var sequence: [UInt64] = [0, 0]
    private var summary: ImpairmentSummary
    private var startUptimeNs: UInt64 = 0
    private let upstreamAddress: SocketAddress
    private var listenChannel: (any Channel)?
    private var listenDirty = false
    private var mappings: [SocketAddress: Mapping] = [:]
    private var dirtyMappings: [Mapping] = []
    private var queue = Heap<Departure>()
    private var order: UInt64 = 0
    private var timer: Scheduled<Void>?
    private var timerAt: UInt64 = .max
    private var held: [[Held]] = [[], []]
    private var housekeeping: RepeatedTask?
    private var shuttingDown = false
    /// Whether anything reads the DNS header and question: the log, a QNAME or size filter, or
    /// SERVFAIL. Without them the relay skips parsing.
    private let parsesDNS: Bool

    init(config: ImpairmentConfig, replay: ReplayPlan?, log: ImpairmentLog?, arguments: [String], loop: any EventLoop) throws {
        self.upstreamAddress = try config.upstream.socketAddress()
        self.config = config
        self.log = log
        self.arguments = arguments
        self.loop = loop
        self.summary = ImpairmentSummary(seed: config.seed)
        self.lastSummary = NIOLockedValueBox(ImpairmentSummary(seed: config.seed))
        self.parsesDNS = log != nil || config.servfail > 0
            || [config.up, config.down].contains { $0.maxQName != nil || $0.maxSize != nil || $0.rateExcess == .refuse }
        self.models = Direction.allCases.map { d in
            DirectionImpairment(direction: d, config: config.direction(d), seed: config.seed,
                                servfail: config.servfail, replay: replay?.stream(d))
        }
    }

    // MARK: - Start and stop

    func start() async throws -> SocketAddress {
        let listen = try config.listen.socketAddress()
        let channel = try await bootstrap { core in ListenHandler(core: core) }
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(to: listen).get()
        try await loop.submit {
            self.listenChannel = channel
            self.startUptimeNs = NIODeadline.now().uptimeNanoseconds
            self.log?.header(config: self.config, arguments: self.arguments, startedAt: Self.timestamp())
            self.housekeeping = self.loop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in
                self.sweep()
            }
        }.get()
        guard let local = channel.localAddress else { throw ChannelError.unknownLocalAddress }
        return local
    }

    private func bootstrap(_ handler: @escaping @Sendable (RelayCore) -> any ChannelHandler) -> DatagramBootstrap {
        let slots = config.vectorReads
        return DatagramBootstrap(group: loop)
            .channelOption(.datagramVectorReadMessageCount, value: slots)
            // 64 KiB per slot: any UDP datagram fits whole.
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: slots * 65_536))
            .channelOption(.socketOption(.so_rcvbuf), value: 4 << 20)
            .channelOption(.socketOption(.so_sndbuf), value: 4 << 20)
            .channelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(handler(self)) }
            }
    }

    func shutdown() -> EventLoopFuture<ImpairmentSummary> {
        shuttingDown = true
        housekeeping?.cancel()
        timer?.cancel()
        while let departure = queue.popMin() {
            if case .send(let out) = departure.kind { summary[out.direction].unsentAtExit += 1 }
        }
        for d in Direction.allCases {
            summary[d].unsentAtExit += held[d.index].count
            held[d.index] = []
        }
        var closes: [EventLoopFuture<Void>] = []
        if let listenChannel { closes.append(listenChannel.close()) }
        for mapping in mappings.values {
            if let channel = mapping.channel { closes.append(channel.close()) }
        }
        mappings = [:]
        return EventLoopFuture.whenAllComplete(closes, on: loop).map { _ in
            let final = self.currentSummary()
            self.log?.summary(final)
            self.log?.close()
            self.lastSummary.withLockedValue { $0 = final }
            return final
        }
    }

    func currentSummary() -> ImpairmentSummary {
        var s = summary
        s.seconds = Double(nowNs()) / 1e9
        lastSummary.withLockedValue { $0 = s }
        return s
    }

    private func nowNs() -> UInt64 {
        NIODeadline.now().uptimeNanoseconds &- startUptimeNs
    }

    static func timestamp() -> String { Timestamp.rfc3339() }

    // MARK: - Arrivals

    /// A datagram from a client.
    func clientDatagram(_ envelope: AddressedEnvelope<ByteBuffer>) {
        guard !shuttingDown else { return }
        let mapping = mapping(for: envelope.remoteAddress)
        mapping.lastActiveNs = nowNs()
        handle(.up, envelope.data, mapping: mapping)
    }

    /// A datagram on a client's upstream socket.
    func upstreamDatagram(_ envelope: AddressedEnvelope<ByteBuffer>, mapping: Mapping) {
        guard !shuttingDown else { return }
        guard envelope.remoteAddress == upstreamAddress else {
            summary.foreign += 1
            return
        }
        mapping.lastActiveNs = nowNs()
        handle(.down, envelope.data, mapping: mapping)
    }

    private func handle(_ direction: Direction, _ data: ByteBuffer, mapping: Mapping) {
        let now = nowNs()
        if summary.firstArrivalNs == nil { summary.firstArrivalNs = now }
        summary.lastArrivalNs = now
        let seq = sequence[direction.index]
        sequence[direction.index] += 1
        let (info, verdict) = data.withUnsafeReadableBytes { bytes in
            let info = parsesDNS ? DatagramInfo(bytes: bytes) : DatagramInfo(size: bytes.count)
            let verdict = models[direction.index].decide(info, nowNs: now)
            log?.record(direction: direction, seq: seq, receivedNs: now, peer: mapping.peer, bytes: bytes, info: info, verdict: verdict)
            return (info, verdict)
        }
        summary[direction].count(verdict, receivedNs: now)

        switch verdict.action {
        case .drop:
            return
        case .servfail:
            let answer = data.withUnsafeReadableBytes { SyntheticResponse.servfail(query: $0, info: info) }
            writeToClient(listenChannel?.allocator.buffer(bytes: answer) ?? ByteBuffer(bytes: answer), mapping: mapping)
        case .refused:
            let answer = data.withUnsafeReadableBytes { SyntheticResponse.refused(query: $0, info: info) }
            writeToClient(listenChannel?.allocator.buffer(bytes: answer) ?? ByteBuffer(bytes: answer), mapping: mapping)
        case .forward:
            var payload = data
            if verdict.truncated {
                payload = ByteBuffer(bytes: data.withUnsafeReadableBytes { SyntheticResponse.truncated(original: $0, info: info) })
            }
            let out = Outgoing(direction: direction, seq: seq, payload: payload, copies: verdict.copies,
                               mapping: mapping, reorderGap: verdict.reorderGap)
            if verdict.departureNs <= now {
                transmit(out, now: now)
            } else {
                // A datagram that waits must not pin the large receive buffer it was read into.
                var copy = out
                copy.payload = ByteBuffer(bytes: data.readableBytesView)
                if verdict.truncated { copy.payload = payload }
                schedule(Departure(at: verdict.departureNs, order: nextOrder(), kind: .send(copy)))
            }
        }
    }

    private func mapping(for client: SocketAddress) -> Mapping {
        if let existing = mappings[client] { return existing }
        let mapping = Mapping(client: client)
        mappings[client] = mapping
        let wildcard = upstreamAddress.protocol == .inet6 ? "::" : "0.0.0.0"
        bootstrap { core in UpstreamHandler(core: core, mapping: mapping) }
            .bind(host: wildcard, port: 0)
            .hop(to: loop)
            .whenComplete { result in
                switch result {
                case .success(let channel):
                    guard !self.shuttingDown, self.mappings[client] === mapping else {
                        channel.close(promise: nil)
                        return
                    }
                    mapping.channel = channel
                    for payload in mapping.pending { channel.write(self.envelope(payload, to: self.upstreamAddress), promise: nil) }
                    mapping.pending = []
                    channel.flush()
                case .failure:
                    self.summary.up.sendErrors += mapping.pending.count
                    mapping.pending = []
                    if self.mappings[client] === mapping { self.mappings[client] = nil }
                }
            }
        return mapping
    }

    // MARK: - Departures

    private func nextOrder() -> UInt64 {
        order += 1
        return order
    }

    private func schedule(_ departure: Departure) {
        queue.insert(departure)
        if departure.at < timerAt { armTimer(at: departure.at) }
    }

    private func armTimer(at: UInt64) {
        timer?.cancel()
        timerAt = at
        let deadline = NIODeadline.uptimeNanoseconds(startUptimeNs &+ at)
        timer = loop.scheduleTask(deadline: deadline) { self.timerFired() }
    }

    private func timerFired() {
        timer = nil
        timerAt = .max
        guard !shuttingDown else { return }
        let now = nowNs()
        while let first = queue.min, first.at <= now {
            let departure = queue.removeMin()
            switch departure.kind {
            case .send(let out):
                transmit(out, now: now)
            case .release(let direction, let id):
                if let index = held[direction.index].firstIndex(where: { $0.id == id }) {
                    let item = held[direction.index].remove(at: index)
                    send(item.out)
                }
            }
        }
        flushDirty()
        if let first = queue.min { armTimer(at: first.at) }
    }

    /// Sends now, or holds the datagram back when it was chosen for reordering.
    private func transmit(_ out: Outgoing, now: UInt64) {
        if let gap = out.reorderGap {
            var plain = out
            plain.reorderGap = nil
            let id = nextOrder()
            held[out.direction.index].append(Held(id: id, out: plain, remaining: gap))
            schedule(Departure(at: now + Reordering.maxHoldNs, order: id, kind: .release(out.direction, id)))
            return
        }
        send(out)
    }

    /// Writes the copies, then lets held datagrams of the same direction that were waiting for
    /// later ones count this one.
    private func send(_ out: Outgoing) {
        for _ in 0..<out.copies {
            switch out.direction {
            case .up: writeUpstream(out.payload, mapping: out.mapping)
            case .down: writeToClient(out.payload, mapping: out.mapping)
            }
        }
        summary[out.direction].sent += out.copies
        let d = out.direction.index
        guard !held[d].isEmpty else { return }
        var released: [Outgoing] = []
        held[d] = held[d].compactMap { item in
            guard item.out.seq < out.seq else { return item }
            var item = item
            item.remaining -= 1
            if item.remaining <= 0 {
                released.append(item.out)
                return nil
            }
            return item
        }
        for item in released { send(item) }
    }

    private func writeUpstream(_ payload: ByteBuffer, mapping: Mapping) {
        guard let channel = mapping.channel else {
            mapping.pending.append(payload)
            return
        }
        channel.write(envelope(payload, to: upstreamAddress), promise: nil)
        if !mapping.dirty {
            mapping.dirty = true
            dirtyMappings.append(mapping)
        }
    }

    private func writeToClient(_ payload: ByteBuffer, mapping: Mapping) {
        guard let listenChannel else { return }
        listenChannel.write(envelope(payload, to: mapping.client), promise: nil)
        listenDirty = true
    }

    private func envelope(_ payload: ByteBuffer, to address: SocketAddress) -> AddressedEnvelope<ByteBuffer> {
        AddressedEnvelope(remoteAddress: address, data: payload)
    }

    func flushDirty() {
        if listenDirty {
            listenDirty = false
            listenChannel?.flush()
        }
        for mapping in dirtyMappings {
            mapping.dirty = false
            mapping.channel?.flush()
        }
        dirtyMappings.removeAll(keepingCapacity: true)
    }

    func sendError(_ direction: Direction) {
        summary[direction].sendErrors += 1
    }

    /// Once a second: close idle mappings and push the log to disk.
    private func sweep() {
        let now = nowNs()
        let idle = UInt64(config.mappingIdleSeconds * 1e9)
        for (client, mapping) in mappings where now &- mapping.lastActiveNs > idle && mapping.channel != nil {
            mapping.channel?.close(promise: nil)
            mappings[client] = nil
        }
        log?.flush()
    }
}

/// One client address and its upstream socket. Confined to the relay's event loop like
/// `RelayCore`; the unchecked conformance only lets NIO's bootstrap closures carry it there.
final class Mapping: @unchecked Sendable {
    let client: SocketAddress
    /// "ip:port" of the client, as the log writes it.
    let peer: String
    var channel: (any Channel)?
    /// Datagrams ready before the upstream socket was bound.
    var pending: [ByteBuffer] = []
    var lastActiveNs: UInt64 = 0
    var dirty = false

    init(client: SocketAddress) {
        self.client = client
        let host = client.ipAddress ?? "?"
        let port = client.port ?? 0
        peer = client.protocol == .inet6 ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}

struct Outgoing {
    var direction: Direction
    var seq: UInt64
    var payload: ByteBuffer
    var copies: Int
    var mapping: Mapping
    var reorderGap: Int?
}

struct Held {
    var id: UInt64
    var out: Outgoing
    var remaining: Int
}

/// An entry of the delay queue: a datagram to send, or the end of a reordering hold.
struct Departure: Comparable {
    enum Kind {
        case send(Outgoing)
        case release(Direction, UInt64)
    }

    var at: UInt64
    var order: UInt64
    var kind: Kind

    static func < (a: Departure, b: Departure) -> Bool { (a.at, a.order) < (b.at, b.order) }
    static func == (a: Departure, b: Departure) -> Bool { a.at == b.at && a.order == b.order }
}

extension Direction {
    var index: Int { self == .up ? 0 : 1 }
}
