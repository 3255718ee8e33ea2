public import Base
import DNSWire
import Foundation
import NIOCore
import NIOPosix
import OSLayer
import PathMetrics
import ProbeProtocol
import Results

/// One paced stream of sequenced path probes to one resolver, on its own SwiftNIO datagram channel.
///
/// Unlike `QueryEngine`, which keeps the first answer of a DNS id and drops the rest, this receive path
/// records every response copy: duplicates are a measurement here. Responses are tied to probes by
/// their question name (stream, seq and nonce inside the authenticated meta block), not by DNS id.
/// All state lives on the channel's event loop.
public final class PathStream: @unchecked Sendable {
    public let resolver: Endpoint
    public let streamID: UInt32
    private let settings: PathSettings
    private let loop: any EventLoop
    private let address: SocketAddress
    private var channel: (any Channel)?
    private var rng: SplitMix64

    // Per seq, indexed by seq.
    private var records: [PathRecord] = []
    private var wire: [PathStreamResult.Wire] = []
    private var drainNonces: [UInt64: UInt32] = [:]
    private var drainsSent = 0
    private var drainsAnswered = 0
    private var unmatched = 0
    /// Every datagram read from the stream's socket, whatever it turned out to be (a capture counts these).
    private var datagramsReceived = 0
    private var anyReply = false
    private var absent = false
    private var sendError: String?
    private var stopping = false
    private var start: UInt64 = 0
    private var originMicros: UInt64 = 0
    private var finished: EventLoopPromise<PathStreamResult>?
    private var repairCursor = 0
    private var lastRepair: UInt64 = 0
    /// A quarter of the time the responder's history (`PathReply.historyDepth` seqs) spans at this rate, at most Tmax.
    private let repairAfter: UInt64

    /// Pacing granularity: probes due are sent in a burst every tick (1 ms, or the interval when longer).
    private let tickNanos: Int64

    init(resolver: Endpoint, streamID: UInt32, settings: PathSettings, loop: any EventLoop, seed: UInt64) throws {
        guard let address = resolver.socketAddress else { throw PathError.badAddress(resolver.description) }
        self.resolver = resolver
        self.streamID = streamID & PathProbe.maxStream
        self.settings = settings
        self.loop = loop
        self.address = address
        self.rng = SplitMix64(seed: seed)
        tickNanos = max(1_000_000, Int64(1e9 / max(settings.rate, 1e-3)))
        repairAfter = UInt64(min(Double(settings.tmax.nanoseconds), 0.25 * Double(PathReply.historyDepth) / max(settings.rate, 1e-3) * 1e9))
    }

    public enum PathError: Error, CustomStringConvertible {
        case badAddress(String)
        public var description: String {
            switch self {
            case .badAddress(let a): "cannot use resolver address \(a)"
            }
        }
    }

    static func now() -> UInt64 { NIODeadline.now().uptimeNanoseconds }

    /// Opens the socket, runs the stream to its end (or until `stop()`), drains, and returns what it measured.
    func run() async throws -> PathStreamResult {
        let handler = Receiver(stream: self)
        let channel = try await DatagramBootstrap(group: loop)
            .channelOption(.socketOption(.so_rcvbuf), value: 8 << 20)
            .channelOption(.socketOption(.so_sndbuf), value: 8 << 20)
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 65_536))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(handler) }
            }
            // A literal address (see QueryEngine: a resolved "0.0.0.0" can be v4-mapped IPv6).
            .bind(to: try SocketAddress(ipAddress: resolver.isIPv6 ? "::" : "0.0.0.0", port: 0)).get()
        #if os(Linux)
        // SO_RCVBUF is capped by net.core.rmem_max; as root, force the larger buffer so a scheduling hiccup
        // of the client does not drop responses (which would pass for downstream loss).
        try? await channel.setOption(.socketOption(NIOBSDSocket.Option(rawValue: IPSocketAddress.receiveBufferForceOption)), value: 8 << 20).get()
        #endif
        let promise = loop.makePromise(of: PathStreamResult.self)
        loop.execute {
            self.channel = channel
            self.finished = promise
            self.records.reserveCapacity(self.settings.count)
            self.wire.reserveCapacity(self.settings.count)
            self.start = Self.now()
            self.originMicros = UInt64(max(0, Date().timeIntervalSince1970 * 1_000_000))
            self.tick()
        }
        let result = try await promise.futureResult.get()
        try? await channel.close()
        return result
    }

    /// Stops sending (SIGINT): in-flight probes get a short grace, then the stream ends without drains.
    func stop() {
        loop.execute {
            guard !self.stopping else { return }
            self.stopping = true
        }
    }

    private func elapsed() -> UInt64 { Self.now() - start }

    // MARK: sending

    private func tick() {
        let now = elapsed()
        if stopping {
            let grace = min(UInt64(settings.tmax.nanoseconds), 500_000_000)
            loop.scheduleTask(in: .nanoseconds(Int64(grace))) { self.finish(interrupted: true) }
            return
        }
        if !anyReply, now > UInt64(settings.absentAfter.nanoseconds), !records.isEmpty {
            absent = true
            finish(interrupted: false)
            return
        }
        let due = min(settings.count, Int(Double(now) * settings.rate / 1e9) + 1)
        var sentNow = false
        while records.count < due {
            send(seq: UInt32(records.count), at: now)
            sentNow = true
        }
        if sentNow { channel?.flush() }
        repair(now: now)
        if records.count >= settings.count {
            loop.scheduleTask(in: settings.tmax) { self.drainRound(self.settings.drainRounds) }
            return
        }
        // Next tick at the next probe's due time, at most every tickNanos.
        let nextDue = UInt64(Double(records.count) * 1e9 / settings.rate)
        let wait = Int64(max(0, Int64(nextDue) - Int64(elapsed())))
        loop.scheduleTask(in: .nanoseconds(min(max(wait, 50_000), tickNanos))) { self.tick() }
    }

    private func nonce() -> [UInt8] {
        // The system CSPRNG: a nonce must never repeat (PROTOCOL.md), a seeded generator could.
        Prober.nonce()
    }

    private func message(_ probe: PathProbe, nonce: [UInt8], id: UInt16) -> [UInt8]? {
        let meta = probe.meta(nonce: nonce, totalCharacters: settings.uploadCharacters)
        guard let name = try? ProbeName.build(meta: meta, zone: settings.zone, key: settings.key) else { return nil }
        var header = DNSHeader(id: id)
        header.recursionDesired = true
        let m = DNSMessage(header: header, questions: [DNSQuestion(name: name, type: probe.recordType)],
                           edns: EDNS(udpPayloadSize: settings.ednsSize))
        return try? m.serialized()
    }

    private func send(seq: UInt32, at now: UInt64) {
        let n = nonce()
        // DNS ids from the seeded generator (RFC 5452: unpredictable to an off-path attacker; reproducible here).
        let id = UInt16(truncatingIfNeeded: rng.next())
        let probe = PathProbe(stream: streamID, seq: seq, downloadBytes: settings.downloadBytes, recordType: settings.recordType)
        let bytes = message(probe, nonce: n, id: id) ?? []
        records.append(PathRecord(seq: UInt64(seq), sentNanos: now))
        wire.append(.init(nonce: n, dnsID: id, querySize: bytes.count, responseSize: nil))
        guard !bytes.isEmpty, let channel else { return }
        let promise = loop.makePromise(of: Void.self)
        promise.futureResult.whenFailure { [self] error in
            // The first one is kept: "network unreachable" says more than every probe lost.
            if sendError == nil { sendError = Dispatcher.describe(error, to: address) }
        }
        channel.write(AddressedEnvelope(remoteAddress: address, data: channel.allocator.buffer(bytes: bytes)), promise: promise)
    }

    // MARK: draining

    /// Seqs that no receive history has covered yet.
    private func uncovered() -> [Int] { records.indices.filter { records[$0].view == nil } }

    private func drainRound(_ left: Int) {
        let missing = uncovered()
        guard left > 0, !missing.isEmpty, !stopping, !absent else {
            finish(interrupted: stopping)
            return
        }
        sendDrains(for: missing)
        let wait = min(settings.tmax, .seconds(1))
        loop.scheduleTask(in: wait) { self.drainRound(left - 1) }
    }

    /// One drain per window of 32 seqs that holds an uncovered seq (`missing` ascending).
    private func sendDrains(for missing: [Int]) {
        var index = 0
        let last = records.count - 1
        while index < missing.count {
            let first = missing[index]
            let end = min(first + PathReply.maxEntries - 1, last)
            let n = nonce()
            let probe = PathProbe(stream: streamID, seq: UInt32(end), drain: true, downloadBytes: 0, recordType: settings.recordType)
            if let bytes = message(probe, nonce: n, id: UInt16(truncatingIfNeeded: rng.next())), let channel {
                drainNonces[Self.key(n)] = UInt32(end)
                drainsSent += 1
                channel.write(AddressedEnvelope(remoteAddress: address, data: channel.allocator.buffer(bytes: bytes)), promise: nil)
            }
            while index < missing.count, missing[index] <= end { index += 1 }
        }
        channel?.flush()
    }

    /// During the run: seqs that no history covered `repairAfter` after they were sent (a burst of lost
    /// responses) get a drain while the responder's ring still holds them. A drain only says "not seen
    /// yet"; a later view that counts a copy wins, so this can only turn unknown fates into known ones.
    private func repair(now: UInt64) {
        guard now >= lastRepair + 50_000_000 else { return }
        lastRepair = now
        var missing: [Int] = []
        while repairCursor < records.count, records[repairCursor].sentNanos + repairAfter <= now {
            if records[repairCursor].view == nil { missing.append(repairCursor) }
            repairCursor += 1
        }
        if !missing.isEmpty { sendDrains(for: missing) }
    }

    private static func key(_ nonce: [UInt8]) -> UInt64 {
        nonce.prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
    }

    // MARK: receiving

    fileprivate func received(_ bytes: ByteBufferView, from source: SocketAddress) {
        let now = elapsed()
        datagramsReceived += 1
        guard let message = try? DNSMessage(parsing: Array(bytes)), message.header.isResponse,
              message.questions.count == 1 else {
            unmatched += 1
            return
        }
        let question = message.questions[0]
        guard let (probe, nonce) = try? PathProbe.identify(question.name, zone: settings.zone, key: settings.key),
              probe.stream == streamID else {
            unmatched += 1
            return
        }
        let seq = Int(probe.seq)
        if probe.drain {
            guard drainNonces[Self.key(nonce)] == probe.seq else { unmatched += 1; return }
        } else {
            guard seq < records.count, wire[seq].nonce == nonce else { unmatched += 1; return }
        }
        guard message.rcode == .noError, !message.header.truncated,
              let payload = try? DownloadLayout.extract(answers: message.answers, type: probe.recordType, owner: question.name,
                                                        zone: settings.zone, expected: Int.max),
              let reply = try? PathReply.open(payload[...], nonce: nonce, key: settings.key) else {
            if !probe.drain { records[seq].otherResponses += 1 }
            return
        }
        anyReply = true
        for (k, entry) in reply.entries.enumerated() {
            let s = Int(reply.baseSeq) + k
            guard s < records.count else { break }
            let view = entry.copies > 0
                ? ResponderView(copies: entry.copies, receivedMicros: entry.receivedMicros, arrivalIndex: UInt64(entry.arrivalIndex))
                : ResponderView(copies: 0)
            records[s].view = records[s].view.map { $0.merged(with: view) } ?? view
        }
        if probe.drain {
            drainsAnswered += 1
            drainNonces[Self.key(nonce)] = nil
        } else {
            if records[seq].arrivals.isEmpty { wire[seq].responseSize = bytes.count }
            records[seq].arrivals.append(now)
        }
    }

    private func finish(interrupted: Bool) {
        guard let promise = finished else { return }
        finished = nil
        let end = elapsed()
        var kept = records
        var excluded = 0
        if interrupted {
            // Probes whose Tmax had not run out have no fate yet: leave them out rather than call them lost.
            let tmax = UInt64(settings.tmax.nanoseconds)
            kept = records.filter { $0.sentNanos + tmax <= end }
            excluded = records.count - kept.count
        }
        // No authenticated reply in the whole run (however short, drains included): the responder is
        // absent (not running, or another key), which no loss figure can describe.
        if !interrupted, !anyReply, !records.isEmpty { absent = true }
        promise.succeed(PathStreamResult(
            resolver: resolver, stream: streamID, records: kept, wire: Array(wire.prefix(kept.count)),
            drainsSent: drainsSent, drainsAnswered: drainsAnswered, unmatched: unmatched,
            datagramsSent: records.count + drainsSent, datagramsReceived: datagramsReceived, responderAbsent: absent,
            inFlightExcluded: excluded, sendError: sendError, clientSocketDrops: channel?.localAddress?.port.flatMap { UDPCounters.socketDrops(port: $0) },
            clockOriginMicros: originMicros, elapsedSeconds: Double(end) / 1e9))
    }

    final class Receiver: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = AddressedEnvelope<ByteBuffer>
        let stream: PathStream
        init(stream: PathStream) { self.stream = stream }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let envelope = unwrapInboundIn(data)
            stream.received(envelope.data.readableBytesView, from: envelope.remoteAddress)
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            // ICMP port unreachable and the like: the probes concerned time out and are counted lost.
        }
    }
}

/// Runs one `PathStream` per resolver at once and collects their results.
public enum PathSession {
    /// Runs every stream; cancelling the task stops them (SIGINT) and returns what they measured.
    public static func run(_ settings: PathSettings) async throws -> [PathStreamResult] {
        let threads = max(1, min(settings.resolvers.count, System.coreCount))
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        defer { group.shutdownGracefully { _ in } }
        var seeds = SplitMix64(seed: settings.seed)
        var streams: [PathStream] = []
        var used: Set<UInt32> = []
        for resolver in settings.resolvers {
            var id: UInt32
            repeat { id = UInt32(truncatingIfNeeded: seeds.next()) & PathProbe.maxStream } while !used.insert(id).inserted
            streams.append(try PathStream(resolver: resolver, streamID: id, settings: settings, loop: group.next(),
                                          seed: seeds.next()))
        }
        let list = streams
        return try await withTaskCancellationHandler {
            try await withThrowingTaskGroup(of: (Int, PathStreamResult).self) { tasks in
                for (i, stream) in list.enumerated() { tasks.addTask { (i, try await stream.run()) } }
                var results = [PathStreamResult?](repeating: nil, count: list.count)
                for try await (i, result) in tasks { results[i] = result }
                return results.compactMap { $0 }
            }
        } onCancel: {
            for stream in list { stream.stop() }
        }
    }
}
