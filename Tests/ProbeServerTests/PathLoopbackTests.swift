import Base
import DNSWire
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import PathMetrics
import ProbeClient
import ProbeProtocol
import ProbeServer
import Testing
import Results

/// `path` against the in-process responder on loopback, directly and through a relay that drops,
/// duplicates chosen queries and responses: every loss must be attributed to the right direction.
@Suite(.serialized) struct PathLoopbackTests {
    func withServer(history: PathStreamTable = PathStreamTable(), _ body: (SocketAddress) async throws -> Void) async throws {
        let server = ProbeServer(responder: ProbeResponder(configuration: .init(zone: zone, key: key), pathStreams: history),
                                 ratePerSourcePerSecond: 0, logger: Logger(label: "test"))
        let bound = try await server.start(listen: [try SocketAddress(ipAddress: "127.0.0.1", port: 0)])
        do { try await body(try #require(bound.first)) } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    /// Rates stay low: in a debug build the responder's HMACs run unoptimised, and the machine is shared.
    func settings(_ port: Int, count: Int, rate: Double = 500) throws -> PathSettings {
        let target = Endpoint(address: .v4(0x7F00_0001), port: UInt16(port))
        return PathSettings(resolvers: [target], zone: zone, key: key, rate: rate, count: count, uploadCharacters: 80,
                            downloadBytes: 300, tmax: .seconds(1), absentAfter: .seconds(2), seed: 5)
    }

    @Test(.timeLimit(.minutes(1))) func noLossGivesZeroLossAndExactCounts() async throws {
        try await withServer { address in
            let results = try await PathSession.run(try settings(try #require(address.port), count: 500))
            let result = try #require(results.first)
            let a = PathAnalysis(records: result.records, tmaxNanos: 1_000_000_000)
            #expect(a.counts.sent == 500 && a.counts.answered == 500, "\(a.counts) absent \(result.responderAbsent) unmatched \(result.unmatched)")
            #expect(a.counts.lostUp == 0 && a.counts.lostDown == 0 && a.counts.lostUnknown == 0 && a.counts.late == 0)
            #expect(a.counts.duplicatesUp == 0 && a.counts.duplicatesDown == 0)
            #expect(a.loss.up.ratio == 0 && a.loss.up.samples == 500 && a.loss.down.ratio == 0 && a.loss.roundTrip.ratio == 0)
            #expect(a.rtt.p50 != nil && result.unmatched == 0 && !result.responderAbsent)
            // Every response carried the padded payload: 300 bytes asked for.
            #expect(result.wire.allSatisfy { ($0.responseSize ?? 0) > 300 })
        }
    }

    @Test(.timeLimit(.minutes(1))) func relayLossesAreAttributedToTheirDirectionExactly() async throws {
        try await withServer { server in
            let dropUp: Set<UInt32> = [10, 11, 50, 120]
            let dropDown: Set<UInt32> = [20, 77, 78, 79, 198, 199]
            let relay = try await DroppingRelay.start(server: server, dropUp: dropUp, dropDown: dropDown,
                                                      duplicateUp: [30], duplicateDown: [40])
            let results = try await PathSession.run(try settings(try #require(relay.address.port), count: 200))
            await relay.stop()
            let result = try #require(results.first)
            let a = PathAnalysis(records: result.records, tmaxNanos: 1_000_000_000)
            for (seq, fate) in a.fates.enumerated() {
                let expected: PathFate = dropUp.contains(UInt32(seq)) ? .lostUp
                    : dropDown.contains(UInt32(seq)) ? .lostDown : .delivered
                #expect(fate == expected, "seq \(seq)")
            }
            #expect(a.counts.lostUp == 4 && a.counts.lostDown == 6 && a.counts.lostUnknown == 0)
            // The relay sends both copies of query 30 on, so the responder answers twice: two down duplicates.
            #expect(a.counts.duplicatesUp == 1 && a.counts.duplicatesDown == 2)
            #expect(a.loss.up.samples == 200 && a.loss.down.samples == 196)
            // 198 and 199 are covered by no later answer: only the drain can tell.
            #expect(result.drainsAnswered >= 1)
        }
    }

    /// 50 responses in a row lost early in a stream longer than the responder's history (shrunk to 256 seqs
    /// here, to keep the rate low): no later answer covers the first of them and the final drains come too
    /// late, so only the drains sent during the run can tell that these queries did reach the responder.
    @Test(.timeLimit(.minutes(1))) func drainsDuringTheRunAttributeALongBurstOfLostResponses() async throws {
        try await withServer(history: PathStreamTable(limits: .init(ringSize: 256))) { server in
            let dropDown = Set<UInt32>(100..<150)
            let relay = try await DroppingRelay.start(server: server, dropUp: [], dropDown: dropDown,
                                                      duplicateUp: [], duplicateDown: [])
            var s = try settings(try #require(relay.address.port), count: 700, rate: 200)
            s.tmax = .milliseconds(500)
            let results = try await PathSession.run(s)
            await relay.stop()
            let result = try #require(results.first)
            let a = PathAnalysis(records: result.records, tmaxNanos: 500_000_000)
            #expect(a.counts.lostDown == 50 && a.counts.lostUnknown == 0 && a.counts.lostUp == 0, "\(a.counts)")
            #expect((100..<150).allSatisfy { a.fates[$0] == .lostDown })
        }
    }

    @Test(.timeLimit(.minutes(1))) func anAbsentResponderIsReportedAsSuch() async throws {
        // A bound socket that never answers.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let silent = try await DatagramBootstrap(group: group).bind(host: "127.0.0.1", port: 0).get()
        var s = try settings(try #require(silent.localAddress?.port), count: 100000, rate: 1000)
        s.absentAfter = .milliseconds(400)
        let results = try await PathSession.run(s)
        try await silent.close()
        try await group.shutdownGracefully()
        let result = try #require(results.first)
        #expect(result.responderAbsent && result.records.count < 1000)
    }
}

/// A UDP relay between the client and the responder that drops or duplicates the datagrams of chosen seqs.
final class DroppingRelay: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    let server: SocketAddress
    let dropUp: Set<UInt32>, dropDown: Set<UInt32>, duplicateUp: Set<UInt32>, duplicateDown: Set<UInt32>
    private var client: SocketAddress?
    private var group: MultiThreadedEventLoopGroup?
    private var channel: (any Channel)?
    var address: SocketAddress { channel!.localAddress! }

    init(server: SocketAddress, dropUp: Set<UInt32>, dropDown: Set<UInt32>, duplicateUp: Set<UInt32>, duplicateDown: Set<UInt32>) {
        self.server = server
        self.dropUp = dropUp
        self.dropDown = dropDown
        self.duplicateUp = duplicateUp
        self.duplicateDown = duplicateDown
    }

    static func start(server: SocketAddress, dropUp: Set<UInt32>, dropDown: Set<UInt32>, duplicateUp: Set<UInt32>,
                      duplicateDown: Set<UInt32>) async throws -> DroppingRelay {
        let relay = DroppingRelay(server: server, dropUp: dropUp, dropDown: dropDown, duplicateUp: duplicateUp,
                                  duplicateDown: duplicateDown)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        relay.group = group
        relay.channel = try await DatagramBootstrap(group: group)
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 65_536))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(relay) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return relay
    }

    func stop() async {
        try? await channel?.close()
        try? await group?.shutdownGracefully()
    }

    /// (seq, drain) of a query or response, from its question name.
    private func probe(_ bytes: [UInt8]) -> PathProbe? {
        guard let m = try? DNSMessage(parsing: bytes), let q = m.questions.first else { return nil }
        return try? PathProbe.identify(q.name, zone: zone, key: key).probe
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        let bytes = Array(envelope.data.readableBytesView)
        let fromServer = envelope.remoteAddress == server
        if !fromServer { client = envelope.remoteAddress }
        guard let destination = fromServer ? client : server else { return }
        var copies = 1
        if let p = probe(bytes), !p.drain {
            if fromServer {
                if dropDown.contains(p.seq) { return }
                if duplicateDown.contains(p.seq) { copies = 2 }
            } else {
                if dropUp.contains(p.seq) { return }
                if duplicateUp.contains(p.seq) { copies = 2 }
            }
        }
        for _ in 0..<copies {
            context.write(wrapOutboundOut(AddressedEnvelope(remoteAddress: destination,
                                                            data: context.channel.allocator.buffer(bytes: bytes))), promise: nil)
        }
        context.flush()
    }
}
