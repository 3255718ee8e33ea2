import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
@testable import ProbeClient
import Testing

/// The query engine against a UDP peer that answers every second query and drops the rest.
@Suite struct QueryEngineTests {
    /// Answers every second datagram with the same bytes and the QR bit set.
    final class HalfAnswering: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = AddressedEnvelope<ByteBuffer>
        typealias OutboundOut = AddressedEnvelope<ByteBuffer>
        private var count = 0
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var envelope = unwrapInboundIn(data)
            count += 1
            guard count % 2 == 0, var bytes = envelope.data.readBytes(length: envelope.data.readableBytes), bytes.count >= 12 else { return }
            bytes[2] |= 0x80
            context.writeAndFlush(wrapOutboundOut(AddressedEnvelope(remoteAddress: envelope.remoteAddress,
                                                                   data: context.channel.allocator.buffer(bytes: bytes))),
                                  promise: nil)
        }
    }

    /// A closed loop that sends its next query from inside the completion of the last one, as
    /// `loadgen` does; `total` queries in all, `window` in flight.
    final class Loop: Sendable {
        let engine: QueryEngine
        let target: SocketAddress
        let total: Int
        let state = NIOLockedValueBox((sent: 0, answered: 0, timedOut: 0, done: CheckedContinuation<(Int, Int), Never>?.none))

        init(engine: QueryEngine, target: SocketAddress, total: Int) {
            self.engine = engine
            self.target = target
            self.total = total
        }

        func next() {
            let go = state.withLockedValue { s -> Bool in
                guard s.sent < total else { return false }
                s.sent += 1
                return true
            }
            guard go else { return }
            engine.send(Array(repeating: 0, count: 17), to: target, timeout: .milliseconds(30)) { [self] result in
                let finished = state.withLockedValue { s -> (CheckedContinuation<(Int, Int), Never>, (Int, Int))? in
                    if case .response = result { s.answered += 1 } else { s.timedOut += 1 }
                    guard s.answered + s.timedOut == total, let done = s.done else { return nil }
                    s.done = nil
                    return (done, (s.answered, s.timedOut))
                }
                if let (done, counts) = finished { done.resume(returning: counts) } else { next() }
            }
        }
    }

    /// Every query ends, answered or timed out, even when a timeout's completion sends the next
    /// query while the engine is still sweeping expired ones (that query's expiry used to be lost,
    /// and a dropped one then never ended).
    @Test(.timeLimit(.minutes(1))) func aLoopThatResendsFromTimeoutsEnds() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let server = try await DatagramBootstrap(group: group)
            .channelInitializer { channel in channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(HalfAnswering()) } }
            .bind(host: "127.0.0.1", port: 0).get()
        let target = try #require(server.localAddress)
        let engine = QueryEngine(seed: 3)
        let loop = Loop(engine: engine, target: target, total: 600)
        let (answered, timedOut) = await withCheckedContinuation { (done: CheckedContinuation<(Int, Int), Never>) in
            loop.state.withLockedValue { $0.done = done }
            for _ in 0..<24 { loop.next() }
            // A lost query never ends: give up after 20 s (the whole loop needs well under one).
            group.next().scheduleTask(in: .seconds(20)) {
                let stuck = loop.state.withLockedValue { s -> (CheckedContinuation<(Int, Int), Never>, (Int, Int))? in
                    guard let done = s.done else { return nil }
                    s.done = nil
                    return (done, (s.answered, s.timedOut))
                }
                if let (done, counts) = stuck { done.resume(returning: counts) }
            }
        }
        #expect(answered + timedOut == 600, "\(600 - answered - timedOut) queries never ended")
        #expect(answered > 200 && timedOut > 200, "answered \(answered), timed out \(timedOut)")
        #expect(engine.counts.timedOut == timedOut)
        await engine.shutdown()
        try await server.close()
        try await group.shutdownGracefully()
    }
}

/// What the engine holds per query, and where its callers resume.
@Suite struct QueryEngineResourceTests {
    /// Answers every datagram with the same bytes and the QR bit set.
    final class Echo: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = AddressedEnvelope<ByteBuffer>
        typealias OutboundOut = AddressedEnvelope<ByteBuffer>
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var envelope = unwrapInboundIn(data)
            guard var bytes = envelope.data.readBytes(length: envelope.data.readableBytes), bytes.count >= 12 else { return }
            bytes[2] |= 0x80
            context.writeAndFlush(wrapOutboundOut(AddressedEnvelope(remoteAddress: envelope.remoteAddress,
                                                                   data: context.channel.allocator.buffer(bytes: bytes))),
                                  promise: nil)
        }
    }

    /// 300 answered queries with a 30 s timeout leave no expiry record behind: each answered one's
    /// record goes when the queries before it are answered, not a whole timeout later (where a
    /// monitor at 1,300 checks/s held a second's worth of them, 300 kB).
    @Test(.timeLimit(.minutes(1))) func answeredQueriesLeaveNoExpiryBehind() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let server = try await DatagramBootstrap(group: group)
            .channelInitializer { channel in channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Echo()) } }
            .bind(host: "127.0.0.1", port: 0).get()
        let target = try #require(server.localAddress)
        let engine = QueryEngine(seed: 9)
        var answered = 0
        for _ in 0..<30 {
            await withTaskGroup(of: Bool.self) { queries in
                for _ in 0..<10 {
                    queries.addTask {
                        if case .response = await engine.query(Array(repeating: 0, count: 17), to: target, timeout: .seconds(30)) { return true }
                        return false
                    }
                }
                for await ok in queries where ok { answered += 1 }
            }
        }
        #expect(answered == 300)
        #expect(await engine.heldExpiries() == 0)
        await engine.shutdown()
        try await server.close()
        try await group.shutdownGracefully()
    }

    /// A query the kernel refuses to send (to the loopback broadcast address, without SO_BROADCAST: EACCES)
    /// fails at once with the reason, and only that query: the ones queued in the same flush before
    /// and after it are still sent and answered. (NIO's channel closed the socket on that error and
    /// failed every query in flight with "the socket closed after a send error".)
    @Test(.timeLimit(.minutes(1))) func aRefusedSendFailsOnlyItsQuery() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let server = try await DatagramBootstrap(group: group)
            .channelInitializer { channel in channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Echo()) } }
            .bind(host: "127.0.0.1", port: 0).get()
        let target = try #require(server.localAddress)
        let broadcast = try SocketAddress(ipAddress: "127.255.255.255", port: 53)
        let engine = QueryEngine(seed: 11)
        // Open the socket first, so the three queries below are queued in one event-loop tick.
        _ = await engine.query(Array(repeating: 0, count: 17), to: target, timeout: .seconds(5))
        let results = await withTaskGroup(of: (Int, QueryResult).self) { queries in
            for (index, address) in [target, broadcast, target].enumerated() {
                queries.addTask { (index, await engine.query(Array(repeating: 0, count: 17), to: address, timeout: .seconds(5))) }
            }
            var all: [Int: QueryResult] = [:]
            for await (index, result) in queries { all[index] = result }
            return all
        }
        for index in [0, 2] {
            guard case .response = results[index] else {
                Issue.record("query \(index) to the echo peer: \(String(describing: results[index]))")
                continue
            }
        }
        guard case .sendFailed(let why) = results[1] else {
            Issue.record("the broadcast query: \(String(describing: results[1]))")
            return
        }
        #expect(why == "sending to 127.255.255.255:53 is not permitted (a firewall rule?)")
        // The socket stays open: a later query is answered.
        guard case .response = await engine.query(Array(repeating: 0, count: 17), to: target, timeout: .seconds(5)) else {
            Issue.record("a query after the refused one was not answered")
            return
        }
        await engine.shutdown()
        try await server.close()
        try await group.shutdownGracefully()
    }

    /// A task that prefers the engine's executor runs on its event loop and is resumed there after
    /// an answer (monitor relies on it: no hop to the global executor per query).
    @Test(.timeLimit(.minutes(1))) func aTaskOnTheEnginesExecutorResumesOnItsLoop() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let server = try await DatagramBootstrap(group: group)
            .channelInitializer { channel in channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Echo()) } }
            .bind(host: "127.0.0.1", port: 0).get()
        let target = try #require(server.localAddress)
        let engine = QueryEngine(seed: 10)
        let onLoop = await Task(executorPreference: engine.taskExecutor) { () -> [Bool] in
            var seen = [engine.taskExecutor.loop.inEventLoop]
            for _ in 0..<3 {
                _ = await engine.query(Array(repeating: 0, count: 17), to: target, timeout: .seconds(5))
                seen.append(engine.taskExecutor.loop.inEventLoop)
            }
            return seen
        }.value
        #expect(onLoop == [true, true, true, true])
        // Without the preference a task is not on the loop: the check above can fail.
        #expect(await Task { engine.taskExecutor.loop.inEventLoop }.value == false)
        await engine.shutdown()
        try await server.close()
        try await group.shutdownGracefully()
    }
}
