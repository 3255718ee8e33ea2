import Base
import DNSWire
import EngineModels
import NIOCore
import NIOPosix
@testable import ProbeClient
import ProbeProtocol
import Reports
import Testing
@testable import Results

// The whole `scan --server masterdnsvpn` pipeline (stages, searches, confirmation, the report's
// model check) against a stand-in on loopback that answers MTU requests as the Go server does
// (internal/udpserver/server_session.go handleMTUUpRequest and handleMTUDownRequest, answers laid out
// by internal/dnsparser/transport.go buildTXTAnswerChunks) and limits the path as a resolver would:
// names longer than `nameLimit` characters are dropped, answers larger than `responseLimit` come back
// truncated (TC). The codec itself is held to the real server's bytes in
// MasterDnsVPNRecordedExchangeTests; this suite holds the scan to a path whose limits it knows.
@Suite(.serialized) struct MasterDnsVPNServerScanTests {
    static let key = "0123456789abcdef0123456789abcdef"

    final class StandIn: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = AddressedEnvelope<ByteBuffer>
        typealias OutboundOut = AddressedEnvelope<ByteBuffer>
        let probe: MasterDnsVPNMTUProbe
        let zone: DNSName
        let nameLimit: Int
        let responseLimit: Int

        init(probe: MasterDnsVPNMTUProbe, zone: DNSName, nameLimit: Int, responseLimit: Int) {
            self.probe = probe
            self.zone = zone
            self.nameLimit = nameLimit
            self.responseLimit = responseLimit
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var envelope = unwrapInboundIn(data)
            guard let bytes = envelope.data.readBytes(length: envelope.data.readableBytes),
                  let query = try? DNSMessage(parsing: bytes), let question = query.questions.first,
                  question.name.textLength <= nameLimit else { return }
            var header = DNSHeader(id: query.header.id, isResponse: true, recursionDesired: true, recursionAvailable: true)
            var answers: [DNSResourceRecord] = []
            if question.type == .soa {
                // The apex: NOERROR without records, as the Go server answers a type it does not serve.
            } else if let (request, frame, _) = probe.parseRequest(name: question.name, zone: zone) {
                answers = Self.reply(to: request, frame: frame).map {
                    DNSResourceRecord(name: question.name, ttl: 0, rdata: .txt([$0]))
                }
            }
            var message = DNSMessage(header: header, questions: [question], answers: answers, edns: EDNS(udpPayloadSize: 1232))
            if let size = try? message.serialized().count, size > responseLimit {
                header.truncated = true
                message = DNSMessage(header: header, questions: [question], edns: EDNS(udpPayloadSize: 1232))
            }
            guard let out = try? message.serialized() else { return }
            context.writeAndFlush(wrapOutboundOut(AddressedEnvelope(remoteAddress: envelope.remoteAddress,
                                                                   data: context.channel.allocator.buffer(bytes: out))), promise: nil)
        }

        /// The server's reply frame in TXT chunks: one record when it fits 255 bytes, else a first
        /// chunk (0x00, count, header, 242 payload bytes) and chunks of an index and 254 bytes.
        static func reply(to request: MasterDnsVPNMTUProbe.Request, frame: MasterDnsVPNFrame) -> [[UInt8]] {
            let code = Array(frame.payload[1..<5])
            if request.type == .mtuUpRequest {
                let size = frame.payload.count
                return [MasterDnsVPNFrame(sessionID: frame.sessionID, type: .mtuUpReply,
                                          payload: code + [UInt8(size >> 8), UInt8(size & 0xff)]).bytes]
            }
            var reply = MasterDnsVPNFrame(sessionID: frame.sessionID, type: .mtuDownReply,
                                          payload: code + [UInt8(request.size >> 8), UInt8(request.size & 0xff)]
                                              + [UInt8](repeating: 0, count: request.size - 6))
            reply.streamID = frame.streamID
            reply.sequence = frame.sequence
            let raw = reply.bytes
            if raw.count <= 255 { return [raw] }
            let first = 255 - 2 - 11
            let rest = Array(reply.payload[first...])
            let parts = stride(from: 0, to: rest.count, by: 254).map { Array(rest[$0..<min($0 + 254, rest.count)]) }
            return [[0, UInt8(1 + parts.count)] + raw[0..<(11 + first)]] + parts.enumerated().map { [UInt8($0.offset + 1)] + $0.element }
        }
    }

    func scan(method: Int, serverKey: String = key, nameLimit: Int, responseLimit: Int) async throws -> (ScanResult, MasterDnsVPNMTUProbe) {
        let zone = try DNSName("vpn.lab.test")
        let serverProbe = MasterDnsVPNMTUProbe(cipher: try MasterDnsVPNCipher(method: method, keyText: serverKey))
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let server = try await DatagramBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(StandIn(probe: serverProbe, zone: zone, nameLimit: nameLimit,
                                                                           responseLimit: responseLimit))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(server.localAddress?.port)
        let resolver = try Endpoint(parsing: "127.0.0.1:\(port)", defaultPort: nil)
        var configuration = ScanConfiguration(resolvers: [resolver], domains: [zone])
        configuration.timeout = .milliseconds(200)
        configuration.seed = 17
        let engine = QueryEngine(seed: 17)
        let prober = Prober(engine: engine, key: try ProbeKey(bytes: [UInt8](repeating: 1, count: 32)), timeout: .milliseconds(200))
        let clientProbe = MasterDnsVPNMTUProbe(cipher: try MasterDnsVPNCipher(method: method, keyText: Self.key))
        let result = await Scanner(configuration: configuration, prober: prober, masterDnsVPN: clientProbe).run()
        await engine.shutdown()
        try await server.close()
        try await group.shutdownGracefully()
        return (result, clientProbe)
    }

    /// The sizes found are the largest the path carries, in the engine's units: what the engine model
    /// (held to the real client in EngineModelsTests) computes for these limits.
    @Test(.timeLimit(.minutes(2)), arguments: [(1, 200, 700), (5, 253, 1232), (2, 180, 512)])
    func findsTheLargestSizesThePathCarries(method: Int, nameLimit: Int, responseLimit: Int) async throws {
        let (result, probe) = try await scan(method: method, nameLimit: nameLimit, responseLimit: responseLimit)
        let pair = try #require(result.pairs.first)
        #expect(pair.accepted, "\(pair.reason ?? "")")
        let model = MasterDnsVPNGoModel(encryption: EncryptionMethod(rawValue: method)!)
        let d = 12
        let expectedUp = try #require(WireArithmetic.largest(in: 10...512) { model.uploadNameText(payload: $0, domainLength: d) <= nameLimit })
        let expectedDown = try #require(WireArithmetic.largest(in: 20...4096) {
            model.downloadResponseBytes(payload: $0, upload: expectedUp, domainLength: d) <= responseLimit
        })
        #expect(pair.upload?.bytes == expectedUp)
        #expect(pair.download?.bytes == expectedDown)
        #expect(pair.download?.responseSize ?? 0 <= responseLimit)
        #expect(pair.upload?.qnameChars ?? 0 <= nameLimit)
        #expect(pair.confirmation?.ratio == 1)
        let check = ScanServerProbing(edition: "go", encryptionMethod: method, encryptionName: "", baseEncodeData: false,
                                      authentication: "", wireExposure: probe.wireExposure, pairs: result.pairs, model: model)
        #expect(check.modelCheck.pairs == 1 && check.modelCheck.agreeing == 1, "\(check.modelCheck.disagreeing)")
    }

    /// A server with another key answers NODATA: the pair fails the honest-answer stage and says why.
    @Test(.timeLimit(.minutes(1))) func anotherKeyFailsTheHonestAnswerStage() async throws {
        let (result, _) = try await scan(method: 5, serverKey: "not the client's key", nameLimit: 253, responseLimit: 1232)
        let pair = try #require(result.pairs.first)
        #expect(!pair.accepted)
        #expect(pair.stage == .honesty)
        #expect(pair.failure == .noAnswer)
        #expect(pair.reason?.contains("another key") == true)
    }
}
