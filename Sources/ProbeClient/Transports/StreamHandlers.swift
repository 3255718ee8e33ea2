import Base
import NIOCore
import NIOHTTP1
import NIOSSL
import NIOTLS
import Results

/// One query on a stream transport: completed once, by its answer, its timeout or its connection's end.
final class StreamQuery: @unchecked Sendable {
    let bytes: [UInt8]
    let promise: EventLoopPromise<QueryResult>
    var sentAt: NIODeadline?
    private(set) var done = false
    var timer: Scheduled<Void>?
    /// Runs once when the query ends (the pool's load count).
    var onFinish: (() -> Void)?
    /// Set with a failure the resolver gave this query rather than its connection (DoH: an HTTP
    /// status other than 200), for `ResolverTransports.failure(of:)`.
    var failure: TransportFailure?

    init(bytes: [UInt8], promise: EventLoopPromise<QueryResult>) {
        self.bytes = bytes
        self.promise = promise
    }

    func finish(_ result: QueryResult) {
        guard !done else { return }
        done = true
        timer?.cancel()
        timer = nil
        onFinish?()
        onFinish = nil
        promise.succeed(result)
    }

    /// Nanoseconds since the query went on the wire (0 when it never did).
    var rttNanos: UInt64 {
        guard let sentAt else { return 0 }
        return UInt64(max(0, (NIODeadline.now() - sentAt).nanoseconds))
    }
}

/// RFC 1035 4.2.2 / RFC 7766 8: every message on a TCP or TLS stream is preceded by its length in
/// two bytes. Emits one message per frame, without the prefix.
struct DNSStreamFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt16.self),
              buffer.readableBytes >= 2 + Int(length) else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: 2)
        guard let frame = buffer.readSlice(length: Int(length)) else { return .needMoreData }
        context.fireChannelRead(wrapInboundOut(frame))
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        try decode(context: context, buffer: &buffer)
    }
}

/// The queries outstanding on one TCP or TLS connection, matched to answers by DNS id (RFC 7766 7:
/// answers may come in any order). Lives on the connection's event loop.
final class StreamDNSHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer

    private var pending: [UInt16: StreamQuery] = [:]
    private var context: ChannelHandlerContext?
    private var rng: SplitMix64
    private var closedReason: String?

    init(seed: UInt64) {
        rng = SplitMix64(seed: seed)
    }

    var outstanding: Int { pending.count }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    /// Sends one query with a fresh id (RFC 5452: unpredictable; unique among this connection's outstanding ones).
    func send(_ query: StreamQuery) {
        guard let context, closedReason == nil else {
            query.finish(.sendFailed("connection closed: \(closedReason ?? "not open")"))
            return
        }
        var bytes = query.bytes
        var id: UInt16
        repeat { id = UInt16(truncatingIfNeeded: rng.next()) } while pending[id] != nil
        bytes[0] = UInt8(id >> 8)
        bytes[1] = UInt8(id & 0xFF)
        pending[id] = query
        let previous = query.onFinish
        query.onFinish = { [weak self] in
            previous?()
            if self?.pending[id] === query { self?.pending.removeValue(forKey: id) }
        }
        var buffer = context.channel.allocator.buffer(capacity: bytes.count + 2)
        buffer.writeInteger(UInt16(bytes.count))
        buffer.writeBytes(bytes)
        query.sentAt = .now()
        context.writeAndFlush(NIOAny(buffer), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        let view = frame.readableBytesView
        guard view.count >= 12 else { return }
        let id = UInt16(view[view.startIndex]) << 8 | UInt16(view[view.startIndex + 1])
        guard let query = pending.removeValue(forKey: id) else { return }
        query.finish(.response(Array(view), rttNanos: query.rttNanos))
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        closedReason = closedReason ?? "\(error)"
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        let why = closedReason ?? "the resolver closed the connection"
        closedReason = why
        let open = pending
        pending.removeAll()
        for query in open.values { query.finish(.sendFailed("connection closed: \(why)")) }
        context.fireChannelInactive()
    }
}

/// A promise that the first of several parties completes (the connect callback, the handshake,
/// the channel's end); the others are ignored. Used on its event loop only.
final class OncePromise: @unchecked Sendable {
    private let promise: EventLoopPromise<Void>
    private var settled = false

    init(on loop: any EventLoop) { promise = loop.makePromise(of: Void.self) }

    var futureResult: EventLoopFuture<Void> { promise.futureResult }

    func succeed() {
        guard !settled else { return }
        settled = true
        promise.succeed(())
    }

    func fail(_ error: any Error) {
        guard !settled else { return }
        settled = true
        promise.fail(error)
    }
}

/// Completes `ready` when the TLS handshake is done, fails it when the handshake fails or the
/// connection ends first.
final class HandshakeWatcher: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = NIOAny
    let ready: OncePromise

    init(ready: OncePromise) { self.ready = ready }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let tls = event as? TLSUserEvent, case .handshakeCompleted = tls { ready.succeed() }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        ready.fail(error)
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        ready.fail(ChannelError.eof)
        context.fireChannelInactive()
    }
}

/// One DoH exchange on one HTTP/2 stream (RFC 8484 4.1): the request when the stream opens, the
/// body of a 200 answer as the DNS message.
final class DoHStreamHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private let query: StreamQuery
    private let head: HTTPRequestHead
    private let body: [UInt8]?
    private var status: HTTPResponseStatus?
    private var answer: [UInt8] = []

    init(query: StreamQuery, head: HTTPRequestHead, body: [UInt8]?) {
        self.query = query
        self.head = head
        self.body = body
    }

    func channelActive(context: ChannelHandlerContext) {
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if let body {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
        }
        query.sentAt = .now()
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let response):
            status = response.status
        case .body(var buffer):
            // RFC 8484 6: a DNS message is at most 65,535 bytes.
            if answer.count + buffer.readableBytes <= 65_535, let bytes = buffer.readBytes(length: buffer.readableBytes) {
                answer += bytes
            }
        case .end:
            if let status, status.code == 200 {
                query.finish(.response(answer, rttNanos: query.rttNanos))
            } else {
                query.failure = .httpStatus(Int(status?.code ?? 0))
                query.finish(.sendFailed("https: \(TransportFailure.httpStatus(Int(status?.code ?? 0)).name): HTTP status \(status?.code ?? 0)"))
            }
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        query.finish(.sendFailed("https stream: \(error)"))
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        query.finish(.sendFailed("https stream closed before the answer"))
        context.fireChannelInactive()
    }
}
