import Base
import DNSWire
import Logging
import NIOCore
import ProbeClient
import ProbeProtocol
import ProbeServer
import Testing

/// The responder and the scan engine on loopback, without a resolver in between.
@Suite(.serialized) struct LoopbackScanTests {
    func withServer(_ body: (SocketAddress) async throws -> Void) async throws {
        let server = ProbeServer(responder: responder, ratePerSourcePerSecond: 0, logger: Logger(label: "test"))
        let bound = try await server.start(listen: [try SocketAddress(ipAddress: "127.0.0.1", port: 0)])
        do { try await body(try #require(bound.first)) } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test(.timeLimit(.minutes(1))) func scanFindsFullCapacityAndRejectsASilentAddress() async throws {
        try await withServer { address in
            let port = try #require(address.port)
            let live = Endpoint(address: .v4(0x7F00_0001), port: UInt16(port))
            let silent = Endpoint(address: .v4(0x7F00_0001), port: UInt16(9))
            var config = ScanConfiguration(resolvers: [live, silent], domains: [zone])
            config.timeout = .milliseconds(300)
            config.perResolverQPS = 0
            config.seed = 7
            let engine = QueryEngine(seed: 7)
            let prober = Prober(engine: engine, key: key, timeout: config.timeout)
            let result = await Scanner(configuration: config, prober: prober).run()
            await engine.shutdown()
            let good = try #require(result.pairs.first { $0.resolver == live.description })
            #expect(good.accepted)
            #expect(good.upload?.payloadChars == 237 && good.upload?.qnameChars == 253 && good.upload?.bytes == 148)
            // Nothing in between: the responder's own 4096-byte EDNS limit is what bounds the download.
            let size = try #require(good.download?.responseSize)
            #expect(size <= 4096 && size >= 4094, "response size \(size)")
            #expect(good.confirmation?.ratio == 1)
            let bad = try #require(result.pairs.first { $0.resolver == silent.description })
            #expect(!bad.accepted && bad.stage == .reachability)
            #expect(bad.failure == .timeout || bad.failure == .sendFailed)
        }
    }

    @Test(.timeLimit(.minutes(1))) func aResponderWithAnotherKeyIsRejectedAsNotOurs() async throws {
        let impostor = ProbeResponder(configuration: .init(zone: zone, key: try ProbeKey(bytes: Array(50..<82))))
        let server = ProbeServer(responder: impostor, ratePerSourcePerSecond: 0, logger: Logger(label: "test"))
        let bound = try await server.start(listen: [try SocketAddress(ipAddress: "127.0.0.1", port: 0)])
        let port = try #require(bound.first?.port)
        let target = Endpoint(address: .v4(0x7F00_0001), port: UInt16(port))
        var config = ScanConfiguration(resolvers: [target], domains: [zone])
        config.timeout = .milliseconds(300)
        let engine = QueryEngine(seed: 1)
        let result = await Scanner(configuration: config, prober: Prober(engine: engine, key: key, timeout: config.timeout)).run()
        await engine.shutdown()
        await server.stop()
        let pair = try #require(result.pairs.first)
        #expect(!pair.accepted && pair.stage == .honesty && pair.failure == .noAnswer)
    }
}
