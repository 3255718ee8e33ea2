import Logging
import NIOConcurrencyHelpers
public import NIOCore

/// What an internet-facing DNS-over-TCP listener must bound (RFC 7766 6.2, RFC 1035 4.2.2).
public struct TCPLimits: Sendable, Hashable {
    /// Connections open at once on all listen addresses; one more is closed as soon as it is
    /// accepted (RFC 7766 6.2.2: servers must limit concurrent connections).
    public var maxConnections: Int
    /// A connection on which no query has arrived for this long is closed (RFC 7766 6.2.3 asks
    /// for an idle timeout "on the order of seconds").
    public var idleTimeout: TimeAmount
    /// A query whose bytes started arriving but did not complete within this long closes the
    /// connection (a slow sender must not hold a slot; RFC 7766 6.2.3, "slow read/write").
    public var readTimeout: TimeAmount

    /// 4096 connections (well inside a 20,000-descriptor limit and a few MiB of memory), 10 s idle
    /// (unbound and BIND keep an upstream connection for at most a few seconds of silence), 5 s to
    /// finish a query that started.
    public static let standard = TCPLimits(maxConnections: 4096, idleTimeout: .seconds(10), readTimeout: .seconds(5))

    public init(maxConnections: Int, idleTimeout: TimeAmount, readTimeout: TimeAmount) {
        self.maxConnections = maxConnections
        self.idleTimeout = idleTimeout
        self.readTimeout = readTimeout
    }
}

/// One DNS-over-TCP connection: messages framed by a 2-byte length (RFC 1035 4.2.2), read one after
/// the other without waiting for the answers (pipelining, RFC 7766 6.2.1.1); each is answered as
/// soon as it is complete, so answers to queries that arrive together may leave in any order the
/// responder finishes them (here, the order they were read, which RFC 7766 allows but does not require).
final class TCPConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let responder: ProbeResponder
    private let limits: TCPLimits
    private let open: NIOLockedValueBox<Int>
    private let stats: NIOLockedValueBox<ProbeServer.Statistics>
    private let logger: Logger
    private var pending: ByteBuffer?
    private var counted = false
    private var idleTimer: Scheduled<Void>?
    private var readTimer: Scheduled<Void>?
    private var lastWrite: EventLoopFuture<Void>?

    init(responder: ProbeResponder, limits: TCPLimits, open: NIOLockedValueBox<Int>,
         stats: NIOLockedValueBox<ProbeServer.Statistics>, logger: Logger) {
        self.responder = responder
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
        armIdle(context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        idleTimer?.cancel()
        readTimer?.cancel()
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
        var answered = false
        while var buffer = pending, let length = buffer.getInteger(at: buffer.readerIndex, as: UInt16.self) {
            guard length >= 12 else {
                // Shorter than a DNS header: not DNS; the framing cannot be trusted any more.
                stats.withLockedValue { $0.tcpMalformed += 1 }
                context.close(promise: nil)
                pending = nil
                return
            }
            guard buffer.readableBytes >= 2 + Int(length) else { break }
            buffer.moveReaderIndex(forwardBy: 2)
            let query = buffer.readBytes(length: Int(length)) ?? []
            pending = buffer.readableBytes == 0 ? nil : buffer
            answered = true
            answer(query, context: context)
        }
        if answered { armIdle(context) }
        if pending != nil {
            if readTimer == nil { armRead(context) }
        } else {
            readTimer?.cancel()
            readTimer = nil
        }
    }

    private func answer(_ query: [UInt8], context: ChannelHandlerContext) {
        let source: [UInt8] = switch context.remoteAddress {
        case .v4(let a): withUnsafeBytes(of: a.address.sin_addr) { Array($0) }
        case .v6(let a): withUnsafeBytes(of: a.address.sin6_addr) { Array($0) }
        default: []
        }
        let outcome = responder.respond(to: query, source: source, transport: .tcp)
        stats.withLockedValue {
            $0.tcpQueries += 1
            $0.counts[outcome.disposition, default: 0] += 1
        }
        guard let response = outcome.response, response.count <= Int(UInt16.max) else { return }
        var out = context.channel.allocator.buffer(capacity: 2 + response.count)
        out.writeInteger(UInt16(response.count))
        out.writeBytes(response)
        let promise = context.eventLoop.makePromise(of: Void.self)
        context.write(wrapOutboundOut(out), promise: promise)
        lastWrite = promise.futureResult
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            // The client sent its last query (RFC 7766 6.2.4 allows it to half-close): answer, then close.
            context.flush()
            if let lastWrite {
                lastWrite.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
            } else {
                context.close(promise: nil)
            }
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        logger.debug("tcp connection error", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }

    private func armIdle(_ context: ChannelHandlerContext) {
        idleTimer?.cancel()
        let channel = context.channel
        let stats = self.stats
        idleTimer = context.eventLoop.scheduleTask(in: limits.idleTimeout) {
            stats.withLockedValue { $0.tcpTimedOut += 1 }
            channel.close(promise: nil)
        }
    }

    private func armRead(_ context: ChannelHandlerContext) {
        let channel = context.channel
        let stats = self.stats
        readTimer = context.eventLoop.scheduleTask(in: limits.readTimeout) {
            stats.withLockedValue { $0.tcpTimedOut += 1 }
            channel.close(promise: nil)
        }
    }
}
