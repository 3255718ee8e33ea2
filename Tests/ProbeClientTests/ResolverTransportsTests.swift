import Base
import DNSWire
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
@testable import ProbeClient
import Results
import Testing

/// The stream transports against in-process servers on loopback: RFC 7766 framing with answers out
/// of order, a bounded number of connections, and named failures for a port that closes on the
/// ClientHello and a port nothing listens on.
@Suite(.serialized) struct ResolverTransportsTests {
    /// Answers every framed query with the same message (QR set), holding each batch and answering it
    /// in reverse order, so that matching by DNS id is what pairs answers with queries.
    final class ReversingDNSServer: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        private var held: [ByteBuffer] = []

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var frame = unwrapInboundIn(data)
            if frame.readableBytes >= 3, let flags = frame.getInteger(at: frame.readerIndex + 2, as: UInt8.self) {
                frame.setInteger(flags | 0x80, at: frame.readerIndex + 2)
            }
            held.append(frame)
        }

        func channelReadComplete(context: ChannelHandlerContext) {
            for frame in held.reversed() {
                var out = context.channel.allocator.buffer(capacity: frame.readableBytes + 2)
                out.writeInteger(UInt16(frame.readableBytes))
                out.writeImmutableBuffer(frame)
                context.write(NIOAny(out), promise: nil)
            }
            held.removeAll()
            context.flush()
        }
    }

    /// Closes every connection on its first byte: a port that does not speak TLS and says so.
    final class Slammer: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        func channelRead(context: ChannelHandlerContext, data: NIOAny) { context.close(promise: nil) }
    }

    static func server(_ group: MultiThreadedEventLoopGroup, accepted: NIOLockedValueBox<Int>,
                       _ make: @escaping @Sendable () -> [any ChannelHandler]) async throws -> any Channel {
        try await ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                accepted.withLockedValue { $0 += 1 }
                return channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandlers(make()) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    static func query(_ name: String) throws -> [UInt8] {
        var header = DNSHeader(id: 0)
        header.recursionDesired = true
        return try DNSMessage(header: header, questions: [DNSQuestion(name: try DNSName(name), type: .txt)]).serialized()
    }

    @Test(.timeLimit(.minutes(1))) func tcpPipelinesOnAtMostTwoConnectionsAndMatchesOutOfOrderAnswers() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let accepted = NIOLockedValueBox(0)
        let server = try await Self.server(group, accepted: accepted) {
            [ByteToMessageHandler(DNSStreamFrameDecoder()), ReversingDNSServer()]
        }
        let port = try #require(server.localAddress?.port)
        let transports = try ResolverTransports(seed: 29)
        let target = try ResolverTarget(parsing: "tcp://127.0.0.1:\(port)")
        let names = (0..<200).map { "q\($0).transport.test" }
        let answers = await withTaskGroup(of: (String, QueryResult).self) { group in
            for name in names {
                group.addTask { (name, await transports.query(try! Self.query(name), to: target, timeout: .seconds(5))) }
            }
            var all: [(String, QueryResult)] = []
            for await answer in group { all.append(answer) }
            return all
        }
        for (name, result) in answers {
            guard case .response(let bytes, _) = result else {
                Issue.record("\(name): \(result)")
                continue
            }
            let message = try DNSMessage(parsing: bytes)
            let expected = try DNSName(name)
            let echoed = message.questions.first?.name
            #expect(message.header.isResponse && echoed == expected, "\(name): \(String(describing: echoed))")
        }
        #expect(answers.count == 200)
        #expect(accepted.withLockedValue { $0 } <= 2, "connections: \(accepted.withLockedValue { $0 })")
        #expect(transports.failure(of: target.endpoint) == nil)
        // The connections set up are counted (what rank and path report per stream resolver).
        let counts = transports.connections(of: target.endpoint)
        #expect(counts.opened == accepted.withLockedValue { $0 } && counts.failed == 0, "\(counts)")
        await transports.shutdown()
        try await server.close()
        try await group.shutdownGracefully()
    }

    @Test(.timeLimit(.minutes(1))) func aPortThatClosesOnTheClientHelloAndAClosedPortAreNamed() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let accepted = NIOLockedValueBox(0)
        let slammer = try await Self.server(group, accepted: accepted) { [Slammer()] }
        let slamPort = try #require(slammer.localAddress?.port)
        // A port that was just free: bound, then closed.
        let gone = try await Self.server(group, accepted: accepted) { [] }
        let gonePort = try #require(gone.localAddress?.port)
        try await gone.close()

        let transports = try ResolverTransports(seed: 29)
        let refused = try ResolverTarget(parsing: "tls://127.0.0.1:\(slamPort)#dns.transport.test")
        let closed = try ResolverTarget(parsing: "https://127.0.0.1:\(gonePort)/dns-query")
        for target in [refused, closed] {
            let result = await transports.query(try Self.query("x.transport.test"), to: target, timeout: .seconds(3))
            guard case .sendFailed(let why) = result else {
                Issue.record("\(target): \(result)")
                continue
            }
            #expect(why.hasPrefix("\(target.transport): "), "\(why)")
        }
        #expect(transports.failure(of: refused.endpoint)?.name == "handshakeRefused", "\(String(describing: transports.failure(of: refused.endpoint)))")
        #expect(transports.failure(of: closed.endpoint) == .connectionRefused)
        #expect(transports.connections(of: closed.endpoint) == ConnectionCounts(opened: 0, failed: 1, failures: ["connectionRefused": 1]))
        #expect(transports.connections(of: refused.endpoint).failures["handshakeRefused"] == 1)
        await transports.shutdown()
        try await slammer.close()
        try await group.shutdownGracefully()
    }

    /// DoH GET: a query whose request target would pass `dohGetURILimit` is not sent: it fails at
    /// once as uriTooLong (before any connection), where POST would carry it.
    @Test(.timeLimit(.minutes(1))) func aGetTargetAboveTheLimitFailsAsURITooLong() async throws {
        let query = try Self.query(String(repeating: "a", count: 60) + "." + String(repeating: "b", count: 60) + ".transport.test")
        let length = TransportSettings.getTargetLength(path: "/dns-query", queryBytes: query.count)
        // The unpadded base64url of n bytes is ceil(4n/3) characters (RFC 4648 5).
        #expect(length == "/dns-query?dns=".count + Int((Double(query.count) * 4 / 3).rounded(.up)))
        let target = try ResolverTarget(parsing: "https://127.0.0.1:9/dns-query")
        let tight = try ResolverTransports(settings: TransportSettings(dohMethod: .get, dohGetURILimit: length - 1), seed: 29)
        guard case .sendFailed(let why) = await tight.query(query, to: target, timeout: .seconds(2)) else {
            Issue.record("a GET above the limit was sent")
            return
        }
        #expect(why.contains("uriTooLong") && why.contains("\(length)"), "\(why)")
        #expect(tight.connections(of: target.endpoint) == ConnectionCounts(), "no connection tried")
        await tight.shutdown()
        // At the limit it is sent (here to a closed port: a connection failure, not uriTooLong).
        let exact = try ResolverTransports(settings: TransportSettings(dohMethod: .get, dohGetURILimit: length), seed: 29)
        let sent = await exact.query(query, to: target, timeout: .seconds(2))
        if case .sendFailed(let why) = sent { #expect(!why.contains("uriTooLong"), "\(why)") }
        await exact.shutdown()
    }

    @Test func connectionCountsSinceAnEarlierMoment() {
        let earlier = ConnectionCounts(opened: 2, failed: 1, failures: ["unknownCA": 1])
        let now = ConnectionCounts(opened: 5, failed: 3, failures: ["unknownCA": 2, "connectTimeout": 1])
        #expect(now.since(earlier) == ConnectionCounts(opened: 3, failed: 2, failures: ["unknownCA": 1, "connectTimeout": 1]))
        #expect(now.since(now) == ConnectionCounts())
    }

    @Test func setupErrorsAreTyped() {
        #expect(throws: TransportSetupError.self) { try ResolverTransports(settings: TransportSettings(caFile: "/nonexistent/ca.pem"), seed: 1) }
        #expect(throws: TransportSetupError.self) { try ResolverTransports(settings: TransportSettings(pin: "not-base64"), seed: 1) }
    }
}
