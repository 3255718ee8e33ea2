import Base
import Foundation
import NIOCore
import NIOPosix
import NIOSOCKS
import OSLayer

/// A TCP exchange from inside the sandbox, the way an app there makes one. The socket is created and
/// connected on a thread that entered the sandbox's network namespace (a socket stays in the namespace
/// it was created in, `NamespaceThread`), then SwiftNIO adopts it (`withConnectedSocket`); through the
/// engine's SOCKS5 proxy, swift-nio-extras' `SOCKSClientHandler` asks the proxy for the target
/// (RFC 1928). The request goes out once the proxy has connected; the answer is read until the reader
/// says it has enough, the peer closes, or the deadline passes.
enum SandboxConnection {
    /// What came back, timed from the request's send (after the proxy's CONNECT succeeded).
    struct Answer: Sendable {
        /// The bytes `read` kept.
        var kept: [UInt8] = []
        /// All bytes that arrived.
        var received = 0
        var firstByteNanos: UInt64?
        var lastByteNanos: UInt64 = 0
        /// The exchange ended by the deadline (not by the reader or the peer), and how long nothing
        /// had come by then.
        var timedOut = false
        var quietAtDeadlineNanos: UInt64 = 0
        /// An error after some bytes came (a reset): what came before still counts.
        var error: String?
    }

    /// Decides, after each chunk, how many bytes of it to keep and whether to stop reading.
    typealias Reader = @Sendable (_ answer: Answer, _ chunk: ByteBuffer) -> (keep: Int, done: Bool)

    /// Connects to `host`:`port` (through `socks` when given), sends `request` and reads with `read`.
    static func exchange(host: String, port: Int, socks: Endpoint?, namespacePath: String, request: [UInt8],
                         timeout: Duration, read: @escaping Reader) async -> Result<Answer, SandboxProbeFailure> {
        if let socks {
            return await viaProxy(host: host, port: port, socks: socks, namespacePath: namespacePath, request: request,
                                  timeout: timeout, read: read)
        }
        guard let target = SandboxProbes.socketAddress(host: host, port: port) else {
            return .failure(SandboxProbeFailure("connect to \(host):\(port): not an IP address"))
        }
        return await run(connectTo: target, label: "\(host):\(port)", socksTarget: nil, namespacePath: namespacePath,
                         request: request, timeout: timeout, read: read)
    }

    private static func viaProxy(host: String, port: Int, socks: Endpoint, namespacePath: String, request: [UInt8],
                                 timeout: Duration, read: @escaping Reader) async -> Result<Answer, SandboxProbeFailure> {
        guard let proxy = SandboxProbes.socketAddress(host: socks.host, port: Int(socks.port)) else {
            return .failure(SandboxProbeFailure("connect to \(socks): not an IP address"))
        }
        let socksTarget: SOCKSAddress
        if let address = IPAddress(host), let nio = try? SocketAddress(ipAddress: address.description, port: port) {
            socksTarget = .address(nio)
        } else {
            // RFC 1928 5: a domain name is one length octet and at most 255 octets.
            guard host.utf8.count <= 255, !host.isEmpty else {
                return .failure(SandboxProbeFailure("SOCKS5 cannot carry the name \(host.prefix(40))…: over 255 bytes"))
            }
            socksTarget = .domain(host, port: port)
        }
        return await run(connectTo: proxy, label: "\(socks)", socksTarget: socksTarget, namespacePath: namespacePath,
                         request: request, timeout: timeout, read: read)
    }

    private static func run(connectTo address: IPSocketAddress, label: String, socksTarget: SOCKSAddress?,
                            namespacePath: String, request: [UInt8], timeout: Duration,
                            read: @escaping Reader) async -> Result<Answer, SandboxProbeFailure> {
        let timeoutMs = timeout.milliseconds
        let connected = try? await NamespaceThread.run(in: namespacePath) { () -> Result<Int32, SandboxProbeFailure> in
            SandboxProbes.connectTCP(to: address, label: label, timeoutMs: timeoutMs).map(\.descriptor)
        }
        guard let connected else { return .failure(SandboxProbeFailure("cannot enter the sandbox")) }
        let descriptor: Int32
        switch connected {
        case .failure(let failure): return .failure(failure)
        case .success(let made): descriptor = made
        }
        let group = MultiThreadedEventLoopGroup.singleton
        let loop = group.next()
        let promise = loop.makePromise(of: Answer.self)
        let collector = Collector(request: request, proxied: socksTarget != nil, read: read, promise: promise)
        do {
            let channel = try await ClientBootstrap(group: loop)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        if let socksTarget { try channel.pipeline.syncOperations.addHandler(SOCKSClientHandler(targetAddress: socksTarget)) }
                        try channel.pipeline.syncOperations.addHandler(collector)
                    }
                }
                .withConnectedSocket(descriptor).get()
            let deadline = loop.scheduleTask(in: .milliseconds(Int64(timeoutMs))) { collector.expire() }
            defer { channel.close(promise: nil) }
            do {
                let answer = try await promise.futureResult.get()
                deadline.cancel()
                return .success(answer)
            } catch {
                deadline.cancel()
                return .failure(describe(error, label: label, target: socksTarget))
            }
        } catch {
            BlockingSocket(descriptor: descriptor).close()
            return .failure(SandboxProbeFailure("cannot adopt the connection to \(label): \(error)"))
        }
    }

    /// The failure in words, with RFC 1928's reply code when the proxy refused the CONNECT.
    static func describe(_ error: any Error, label: String, target: SOCKSAddress?) -> SandboxProbeFailure {
        let to = target.map { target -> String in
            switch target {
            case .domain(let name, let port): "\(name):\(port)"
            case .address(let address): "\(address.ipAddress ?? "?"):\(address.port ?? 0)"
            }
        } ?? label
        switch error {
        case let failed as SOCKSError.ConnectionFailed:
            return SandboxProbeFailure("SOCKS5 CONNECT \(to) failed with reply \(failed.reply.value) (RFC 1928 6)")
        case is SOCKSError.InvalidAuthenticationSelection, is SOCKSError.NoValidAuthenticationMethod:
            return SandboxProbeFailure("SOCKS5 proxy \(label) refused the greeting (no-authentication)")
        case is SOCKSError.InvalidProtocolVersion, is SOCKSError.InvalidReservedByte, is SOCKSError.InvalidAddressType,
             is SOCKSError.UnexpectedRead, is SOCKSError.InvalidClientState:
            return SandboxProbeFailure("SOCKS5 reply from \(label) is malformed (\(error))")
        case let closed as Closed:
            return SandboxProbeFailure(closed.proxied ? "SOCKS5 proxy \(label) sent no reply to CONNECT \(to)" : "\(label) closed without an answer")
        case is Expired:
            return SandboxProbeFailure("no response from \(to) in time")
        default:
            return SandboxProbeFailure("connection to \(to) failed: \(error)")
        }
    }

    /// The channel closed before the proxy connected (or, without one, before anything came).
    struct Closed: Error { var proxied: Bool }
    /// The deadline passed before the proxy connected or anything came.
    struct Expired: Error {}

    /// Sends the request once the path is open and gathers the answer for the reader.
    private final class Collector: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer

        // Touched on the channel's event loop only.
        private let request: [UInt8]
        private let proxied: Bool
        private let read: Reader
        private let promise: EventLoopPromise<Answer>
        private var answer = Answer()
        private var start: UInt64?
        private var finished = false
        private var context: ChannelHandlerContext?

        init(request: [UInt8], proxied: Bool, read: @escaping Reader, promise: EventLoopPromise<Answer>) {
            self.request = request
            self.proxied = proxied
            self.read = read
            self.promise = promise
        }

        func handlerAdded(context: ChannelHandlerContext) {
            self.context = context
            if !proxied, context.channel.isActive { send(context) }
        }

        func channelActive(context: ChannelHandlerContext) {
            if !proxied, start == nil { send(context) }
            context.fireChannelActive()
        }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if event is SOCKSProxyEstablishedEvent, start == nil { send(context) }
            context.fireUserInboundEventTriggered(event)
        }

        private func send(_ context: ChannelHandlerContext) {
            start = DispatchTime.now().uptimeNanoseconds
            if request.isEmpty {
                finish(.success(answer))
                return
            }
            context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: request)), promise: nil)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard !finished, let start else { return }
            let chunk = unwrapInboundIn(data)
            let now = DispatchTime.now().uptimeNanoseconds
            if answer.firstByteNanos == nil { answer.firstByteNanos = now - start }
            answer.lastByteNanos = now - start
            let (keep, done) = read(answer, chunk)
            answer.received += chunk.readableBytes
            if keep > 0, let bytes = chunk.getBytes(at: chunk.readerIndex, length: min(keep, chunk.readableBytes)) {
                answer.kept += bytes
            }
            if done { finish(.success(answer)) }
        }

        func channelInactive(context: ChannelHandlerContext) {
            if start == nil { finish(.failure(Closed(proxied: proxied))) } else { finish(.success(answer)) }
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            if start != nil, answer.received > 0 {
                answer.error = "\(error)"
                finish(.success(answer))
            } else {
                finish(.failure(error))
            }
            context.close(promise: nil)
        }

        /// The deadline: what came so far is the answer; nothing at all is a failure.
        func expire() {
            guard !finished else { return }
            if start == nil || answer.received == 0 {
                finish(.failure(Expired()))
            } else {
                answer.timedOut = true
                if let start { answer.quietAtDeadlineNanos = DispatchTime.now().uptimeNanoseconds &- start &- answer.lastByteNanos }
                finish(.success(answer))
            }
            context?.close(promise: nil)
        }

        private func finish(_ result: Result<Answer, any Error>) {
            guard !finished else { return }
            finished = true
            promise.completeWith(result)
        }
    }
}
