import Fates
import Base
import DNSWire
import Foundation
import Impairment
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

/// The ground-truth property `path` is checked against: what arrives at each end of the relay is
/// exactly what its log says it did, datagram by datagram.
@Suite(.serialized)
struct ImpairRelayTests {
    @Test(.timeLimit(.minutes(1)))
    func arrivalsAtBothEndsMatchTheLog() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let upstream = try await UDPPeer.start(group: group, echo: true)
        let client = try await UDPPeer.start(group: group, echo: false)
        let logPath = FileManager.default.temporaryDirectory.appendingPathComponent("impair-\(UUID().uuidString).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: logPath) }

        let config = try relayConfig(upstream: upstream.port) { c in
            c.seed = 2026
            c.logPath = logPath
            c.up.loss = .bernoulli(0.1)
            c.up.duplicate = 0.1
            c.up.reorder = Reordering(probability: 0.05, gap: 2)
            c.up.delayMs = 1
            c.up.jitterMs = 0.5
            c.down.loss = .gilbertElliott(GilbertElliottParameters(p: 0.05, r: 0.3))
            c.down.duplicate = 0.05
            c.down.reorder = Reordering(probability: 0.05, gap: 1)
        }
        let relay = try ImpairRelay(config: config, log: try ImpairmentLog(path: logPath))
        let relayAddress = try await relay.start()

        let count = 2000
        for i in 0..<count {
            let query = try DNSMessage(header: DNSHeader(id: UInt16(i), recursionDesired: true),
                                       questions: [DNSQuestion(name: DNSName("q\(i).vpn.lab.test"), type: .txt)]).serialized()
            try await client.send(query, to: relayAddress)
            if i % 10 == 9 { try await Task.sleep(for: .milliseconds(2)) }
        }
        // Longer than the reordering hold (1 s) and every delay.
        try await Task.sleep(for: .milliseconds(1600))
        let summary = await relay.stop()

        let lines = try String(contentsOfFile: logPath, encoding: .utf8).split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
        #expect(lines.first?["schema"] as? String == "tunnelprobe.impair-log/1")
        #expect(lines.last?["summary"] != nil)
        let records = lines.dropFirst().dropLast()
        let up = records.filter { $0["dir"] as? String == "up" }
        let down = records.filter { $0["dir"] as? String == "down" }

        // Up: the log lists the queries in the order the client sent them...
        #expect(up.map { $0["id"] as? Int } == (0..<count).map { $0 })
        #expect(up.map { $0["seq"] as? Int } == (0..<count).map { $0 })
        #expect(up.allSatisfy { ($0["qname"] as? String) == "q\($0["id"] as! Int).vpn.lab.test" })
        // ...and what reached the upstream is what it says.
        try check(direction: up, arrivals: upstream.arrivals().map { Int($0.id) }, idOf: { $0["id"] as! Int })

        // Down: the log lists the upstream's answers in the order it sent them (the echo numbers
        // its answers: DNS id = its send index)...
        let sentByUpstream = upstream.sent()
        #expect(down.map { $0["id"] as? Int } == sentByUpstream.indices.map { $0 })
        #expect(down.map { $0["qname"] as? String } == sentByUpstream.map { $0.qname })
        // ...and what reached the client is what it says.
        try check(direction: down, arrivals: client.arrivals().map { Int($0.id) }, idOf: { $0["id"] as! Int })

        // The summary agrees with the lines.
        #expect(summary.up.received == count && summary.down.received == down.count)
        #expect(summary.up.dropped[.loss] == up.filter { $0["by"] as? String == "loss" }.count)
        #expect(summary.down.dropped[.ge] == down.filter { $0["by"] as? String == "ge" }.count)
        #expect(summary.up.unsentAtExit == 0 && summary.down.unsentAtExit == 0)
        // Every model did something, so the checks above covered it.
        #expect(summary.up.dropped[.loss, default: 0] > 100 && summary.up.duplicated > 100 && summary.up.reordered > 50)
        #expect(summary.down.dropped[.ge, default: 0] > 50 && summary.down.duplicated > 30 && summary.down.reordered > 30)
        #expect(down.allSatisfy { $0["ge"] as? String != nil })
        await upstream.close()
        await client.close()
        try await group.shutdownGracefully()
    }

    /// SERVFAIL comes from the relay (the upstream sees nothing), and an oversized response
    /// arrives as header + question with TC set.
    @Test(.timeLimit(.minutes(1)))
    func servfailAndTruncationReachTheClientAsDNS() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let upstream = try await UDPPeer.start(group: group, echo: true)
        let client = try await UDPPeer.start(group: group, echo: false)
        let query = try DNSMessage(header: DNSHeader(id: 0x4242, recursionDesired: true),
                                   questions: [DNSQuestion(name: DNSName("servfail.vpn.lab.test"), type: .txt)],
                                   additionals: []).serialized()
        let edits: [@Sendable (inout ImpairmentConfig) -> Void] = [
            { $0.servfail = 1 },
            { $0.down.maxSize = query.count - 1; $0.down.oversize = .truncate },
        ]
        for edit in edits {
            let config = try relayConfig(upstream: upstream.port, edit)
            let relay = try ImpairRelay(config: config)
            let address = try await relay.start()
            try await client.send(query, to: address)
            try await Task.sleep(for: .milliseconds(300))
            let summary = await relay.stop()
            if config.servfail == 1 {
                #expect(summary.up.servfail == 1 && summary.up.forwarded == 0 && upstream.arrivals().isEmpty)
            } else {
                #expect(summary.down.truncated == 1 && upstream.arrivals().count == 1)
            }
        }
        let answers = client.raw()
        #expect(answers.count == 2)
        if answers.count == 2 {
            let servfail = try DNSMessage(parsing: answers[0])
            #expect(servfail.header.id == 0x4242 && servfail.header.isResponse && servfail.header.rcode == .servFail)
            #expect(servfail.questions.first?.name.description == "servfail.vpn.lab.test" && servfail.header.recursionDesired)
            let truncated = try DNSMessage(parsing: answers[1])
            #expect(truncated.header.truncated && truncated.answers.isEmpty && truncated.questions.count == 1)
            #expect(answers[1].count <= query.count)
        }
        await upstream.close()
        await client.close()
        try await group.shutdownGracefully()
    }

    /// `--replay`: the n-th query takes the n-th `up` fate and the n-th answer the n-th `down`
    /// fate, starting over at the end of each stream.
    @Test(.timeLimit(.minutes(1)))
    func replayAppliesTheFatesInOrderAndWraps() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let upstream = try await UDPPeer.start(group: group, echo: true)
        let client = try await UDPPeer.start(group: group, echo: false)
        let fates = FateTrace(source: .init(kind: "model", description: "test"), streams: [
            FateStream(resolver: "192.0.2.1:53", direction: .up, packets: [
                PacketFate(sentMs: 0, size: 40, delivered: true, delayMs: 1),
                PacketFate(sentMs: 1, size: 40, delivered: false),
                PacketFate(sentMs: 2, size: 40, delivered: true, copies: 2),
            ]),
            FateStream(resolver: "192.0.2.1:53", direction: .down, packets: [
                PacketFate(sentMs: 0, size: 40, delivered: false),
                PacketFate(sentMs: 1, size: 40, delivered: true, delayMs: 2),
            ]),
        ])
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("fates-\(UUID().uuidString).json").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try JSONEncoder().encode(fates).write(to: URL(fileURLWithPath: path))
        let config = try relayConfig(upstream: upstream.port) { $0.replayPath = path }
        let relay = try ImpairRelay(config: config, replay: try config.loadReplay())
        let address = try await relay.start()
        for id in 0..<6 {
            let query = try DNSMessage(header: DNSHeader(id: UInt16(id)), questions: [DNSQuestion(name: DNSName("r\(id).vpn.lab.test"), type: .a)]).serialized()
            try await client.send(query, to: address)
            try await Task.sleep(for: .milliseconds(30))
        }
        try await Task.sleep(for: .milliseconds(200))
        let summary = await relay.stop()
        // Up fates: delivered, lost, two copies; twice over.
        #expect(upstream.arrivals().map(\.id) == [0, 2, 2, 3, 5, 5])
        #expect(summary.up.replayWraps == 1 && summary.up.dropped[.replay] == 2)
        // Down fates over the six answers (echo ids 0...5): lost, delivered, lost, delivered, ...
        #expect(client.arrivals().map(\.id) == [1, 3, 5])
        #expect(summary.down.replayWraps == 2 && summary.down.dropped[.replay] == 3)
        await upstream.close()
        await client.close()
        try await group.shutdownGracefully()
    }

    /// One upstream socket per client address, like a NAT mapping; an idle one is closed and the
    /// next datagram from that client gets a new one.
    @Test(.timeLimit(.minutes(1)))
    func eachClientHasItsOwnUpstreamSocketUntilIdle() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let upstream = try await UDPPeer.start(group: group, echo: true)
        let a = try await UDPPeer.start(group: group, echo: false)
        let b = try await UDPPeer.start(group: group, echo: false)
        let config = try relayConfig(upstream: upstream.port) { $0.mappingIdleSeconds = 0.1 }
        let relay = try ImpairRelay(config: config)
        let address = try await relay.start()
        func query(_ id: UInt16) throws -> [UInt8] {
            try DNSMessage(header: DNSHeader(id: id), questions: [DNSQuestion(name: DNSName("m.vpn.lab.test"), type: .a)]).serialized()
        }
        try await a.send(query(1), to: address)
        try await a.send(query(2), to: address)
        try await b.send(query(3), to: address)
        try await Task.sleep(for: .milliseconds(100))
        // The sweep runs every second; 0.1 s idle is long past by then.
        try await Task.sleep(for: .milliseconds(1500))
        try await a.send(query(4), to: address)
        try await Task.sleep(for: .milliseconds(200))
        await relay.stop()
        let ports = Dictionary(uniqueKeysWithValues: upstream.arrivals().map { ($0.id, $0.port) })
        #expect(ports.count == 4)
        #expect(ports[1] == ports[2] && ports[1] != ports[3], "same client, same socket; another client, another")
        #expect(ports[4] != ports[1], "an expired mapping is not reused")
        #expect(a.arrivals().map(\.id).sorted() == [0, 1, 3] && b.arrivals().map(\.id) == [2], "answers find their client")
        await upstream.close()
        await a.close()
        await b.close()
        try await group.shutdownGracefully()
    }

    /// Counts, duplicates and RFC 4737 reordering at the receiving end against the log's lines.
    private func check(direction lines: [[String: Any]], arrivals: [Int], idOf: ([String: Any]) -> Int) throws {
        var expectedCopies: [Int: Int] = [:]
        var seqOf: [Int: Int] = [:]
        var held: Set<Int> = []
        for line in lines {
            let id = idOf(line)
            seqOf[id] = line["seq"] as? Int
            expectedCopies[id] = line["action"] as? String == "forward" ? line["copies"] as! Int : 0
            if line["reorderGap"] != nil { held.insert(id) }
        }
        var arrived: [Int: Int] = [:]
        for id in arrivals { arrived[id, default: 0] += 1 }
        let mismatched = expectedCopies.filter { arrived[$0.key, default: 0] != $0.value }
        #expect(mismatched.isEmpty, "ids whose copies differ from the log: \(mismatched.keys.sorted().prefix(10))")
        #expect(Set(arrived.keys).isSubset(of: Set(expectedCopies.keys)))

        // RFC 4737 section 3.3: NextExp over first arrivals.
        var nextExpected = 0
        var seen: Set<Int> = []
        var reordered: Set<Int> = []
        for id in arrivals where seen.insert(id).inserted {
            let seq = seqOf[id]!
            if seq >= nextExpected { nextExpected = seq + 1 } else { reordered.insert(id) }
        }
        // A held datagram leaves once `reorderGap` later ones of its direction have left, or when the
        // hold (Reordering.maxHoldNs, 1 s) runs out first: near the end, with nothing behind it, or
        // when the test's sender stalled (suites run side by side on two cores; the log's times show
        // it). Such a datagram may arrive in order; one whose followers left promptly may not.
        var departures: [(seq: Int, at: Int)] = []
        var gapOf: [Int: Int] = [:]
        for line in lines where line["action"] as? String == "forward" {
            let id = idOf(line)
            let at = (line["tNs"] as! Int) + (line["delayNs"] as! Int)
            departures.append((seqOf[id]!, at))
            if let gap = line["reorderGap"] as? Int { gapOf[id] = gap }
        }
        let mayHaveTimedOut = held.filter { id in
            let seq = seqOf[id]!, at = departures.first { $0.seq == seq }!.at
            let followers = departures.filter { $0.seq > seq && $0.at >= at }.map(\.at).sorted()
            let gap = gapOf[id]!
            return followers.count < gap || followers[gap - 1] - at > Int(Reordering.maxHoldNs / 2)
        }
        #expect(reordered.isSubset(of: held), "reordered without a log mark: \(reordered.subtracting(held).sorted().prefix(10))")
        #expect(held.subtracting(reordered).isSubset(of: mayHaveTimedOut),
                "marked but in order: \(held.subtracting(reordered).subtracting(mayHaveTimedOut).sorted().prefix(10))")
        // The rule must not excuse everything: with the sender pacing itself, most holds end by count.
        #expect(mayHaveTimedOut.count * 2 < max(held.count, 2), "\(mayHaveTimedOut.count) of \(held.count) holds could have timed out")
    }
}

/// A UDP socket in the test process that records what it receives; as the "upstream" it answers
/// every datagram at once with a response whose DNS id is its own send index (so each answer,
/// duplicates included, can be told apart at the client) and whose question is the query's.
final class UDPPeer: Sendable {
    struct Datagram: Sendable {
        var id: UInt16
        var qname: String?
        /// The sender's port.
        var port: Int = 0
    }

    private let channel: any Channel
    private let state: NIOLockedValueBox<(received: [Datagram], sent: [Datagram])>
    private let bytes: NIOLockedValueBox<[[UInt8]]>
    var port: Int { channel.localAddress?.port ?? 0 }

    private init(channel: any Channel, state: NIOLockedValueBox<(received: [Datagram], sent: [Datagram])>, bytes: NIOLockedValueBox<[[UInt8]]>) {
        self.channel = channel
        self.state = state
        self.bytes = bytes
    }

    static func start(group: any EventLoopGroup, echo: Bool) async throws -> UDPPeer {
        let state = NIOLockedValueBox<(received: [Datagram], sent: [Datagram])>(([], []))
        let bytes = NIOLockedValueBox<[[UInt8]]>([])
        let channel = try await DatagramBootstrap(group: group)
            .channelOption(.socketOption(.so_rcvbuf), value: 4 << 20)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Handler(state: state, bytes: bytes, echo: echo))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return UDPPeer(channel: channel, state: state, bytes: bytes)
    }

    func send(_ bytes: [UInt8], to address: SocketAddress) async throws {
        try await channel.writeAndFlush(AddressedEnvelope(remoteAddress: address, data: ByteBuffer(bytes: bytes)))
    }

    func arrivals() -> [Datagram] { state.withLockedValue { $0.received } }
    func sent() -> [Datagram] { state.withLockedValue { $0.sent } }
    /// Every datagram received, as bytes.
    func raw() -> [[UInt8]] { bytes.withLockedValue { $0 } }
    func close() async { try? await channel.close() }

    private final class Handler: ChannelInboundHandler {
        typealias InboundIn = AddressedEnvelope<ByteBuffer>
        typealias OutboundOut = AddressedEnvelope<ByteBuffer>
        let state: NIOLockedValueBox<(received: [Datagram], sent: [Datagram])>
        let bytes: NIOLockedValueBox<[[UInt8]]>
        let echo: Bool

        init(state: NIOLockedValueBox<(received: [Datagram], sent: [Datagram])>, bytes: NIOLockedValueBox<[[UInt8]]>, echo: Bool) {
            self.state = state
            self.bytes = bytes
            self.echo = echo
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let envelope = unwrapInboundIn(data)
            let bytes = Array(envelope.data.readableBytesView)
            self.bytes.withLockedValue { $0.append(bytes) }
            guard let message = try? DNSMessage(parsing: bytes) else { return }
            let qname = message.questions.first.map { $0.name.description }
            let index: Int = state.withLockedValue { s in
                s.received.append(Datagram(id: message.header.id, qname: qname, port: envelope.remoteAddress.port ?? 0))
                return s.sent.count
            }
            guard echo else { return }
            var answer = message
            answer.header.id = UInt16(truncatingIfNeeded: index)
            answer.header.isResponse = true
            guard let out = try? answer.serialized() else { return }
            state.withLockedValue { $0.sent.append(Datagram(id: answer.header.id, qname: qname)) }
            context.writeAndFlush(wrapOutboundOut(AddressedEnvelope(remoteAddress: envelope.remoteAddress, data: ByteBuffer(bytes: out))), promise: nil)
        }
    }
}

/// A relay from an ephemeral loopback port to `upstream`, seed 1, as edited; checked as `impair` checks it.
func relayConfig(upstream port: Int, _ edit: (inout ImpairmentConfig) -> Void = { _ in }) throws -> ImpairmentConfig {
    var config = ImpairmentConfig(listen: Endpoint(address: .v4(0x7F00_0001), port: 0),
                                  upstream: Endpoint(address: .v4(0x7F00_0001), port: UInt16(port)), seed: 1)
    edit(&config)
    try config.validate()
    return config
}
