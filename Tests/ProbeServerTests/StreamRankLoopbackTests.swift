import Base
import DNSWire
import Logging
import NIOCore
import ProbeClient
import Results
import ProbeProtocol
import ProbeServer
import Testing

/// Issue 29 (and issue 28 item 4, rank's logic in the library): `RankRun` and `StreamPath` over
/// TCP (RFC 7766) to the responder on loopback, without a resolver in between, beside UDP: the pair
/// names its transport, gets a rate and RTTs, and over TCP the first query and the connections.
@Suite(.serialized) struct StreamRankLoopbackTests {
    func withServer(_ body: (Int) async throws -> Void) async throws {
        let server = ProbeServer(responder: responder, ratePerSourcePerSecond: 0, logger: Logger(label: "test"))
        let bound = try await server.start(listen: [try SocketAddress(ipAddress: "127.0.0.1", port: 0)])
        do { try await body(try #require(bound.first?.port)) } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    static func pair(_ resolver: String) -> ScanPair {
        ScanPair(resolver: resolver, domain: zone.description, accepted: true,
                 upload: .init(bytes: 148, qnameChars: 253, payloadChars: 237, encoding: "base32", limitedBy: nil, caseChanged: false),
                 download: .init(bytes: 900, responseSize: 1000, recordType: "TXT", limitedBy: nil), rttMs: 1, queries: 1)
    }

    @Test func measurablePairsKeepTheirTransportAndOnlyMatchesAnyForm() throws {
        var rejected = Self.pair("192.0.2.9:53")
        rejected.accepted = false
        let pairs = [Self.pair("192.0.2.1:53"), Self.pair("tls://192.0.2.2:853#dns.example"), rejected,
                     Self.pair("https://[2001:db8::53]:443/dns-query")]
        let all = RankTarget.measurable(pairs)
        #expect(all.map(\.target.transport) == [.udp, .tls, .https])
        #expect(all[1].target.serverName == "dns.example" && all[1].queryCharacters == 237 && all[1].answerBytes == 900)
        #expect(RankTarget.measurable(pairs, only: ["192.0.2.1"]).count == 1)
        #expect(RankTarget.measurable(pairs, only: ["tls://192.0.2.2:853"]).map(\.target.transport) == [.tls])
        #expect(RankTarget.measurable(pairs, only: ["192.0.2.3"]).isEmpty)
        #expect(streamTargets(all.map(\.target)).count == 2)
        let watched = try #require(MonitorTarget(pair: pairs[1], spare: false, fallbackAnswerBytes: 20))
        #expect(watched.name == "tls://192.0.2.2:853#dns.example" && watched.resolver.port == 853)
    }

    @Test(.timeLimit(.minutes(1))) func rankAndPathOverTCPAndUDP() async throws {
        try await withServer { port in
            let pairs = RankTarget.measurable([Self.pair("127.0.0.1:\(port)"), Self.pair("tcp://127.0.0.1:\(port)")])
            #expect(pairs.count == 2)
            let engine = QueryEngine(seed: 29)
            let transports = try ResolverTransports(seed: 29)
            var settings = CapacitySettings()
            settings.startRate = 20
            settings.ceiling = 40
            settings.stepSeconds = 0.5
            settings.pauseSeconds = 0
            settings.refineSteps = 0
            settings.parallel = 1
            // One prober per transport: the same address and port is UDP for one pair and TCP for the other.
            var results: [PairCapacity] = []
            for pair in pairs {
                var prober = Prober(engine: engine, key: key, timeout: .seconds(1))
                prober.targets = streamTargets([pair.target])
                prober.transports = transports
                results.append(await RankRun(probe: CapacityProbe(prober: prober, settings: settings)).measure(pair, budgetSeconds: 20))
            }
            let udp = results[0], tcp = results[1]
            #expect(udp.transport == .udp && udp.resolver == "127.0.0.1:\(port)")
            #expect(tcp.transport == .tcp && tcp.resolver == "tcp://127.0.0.1:\(port)")
            for c in results {
                #expect(c.sustainableRate == 40 && c.limitedBy == .ceiling, "\(c.resolver): \(c.evidence)")
                #expect(c.rttAtSustainableMs != nil)
            }
            #expect(udp.connections == nil && udp.firstQueryMs == nil)
            #expect(tcp.firstQueryMs != nil && (tcp.connections?.opened ?? 0) >= 1 && tcp.connections?.failed == 0)

            var prober = Prober(engine: engine, key: key, timeout: .seconds(1))
            prober.targets = streamTargets([pairs[1].target])
            prober.transports = transports
            let path = await StreamPath.run(prober: prober, target: pairs[1].target, zone: zone, rate: 100, count: 50,
                                            uploadCharacters: 100, downloadBytes: 300, type: .txt)
            #expect(path.transport == .tcp && path.sent == 50 && path.answered == 50 && path.timedOut == 0, "\(path)")
            #expect(path.rttMs != nil && path.firstQueryMs != nil && path.lastConnectionFailure == nil)
            // A port nothing listens on: every probe fails and the connection failure is named.
            let closed = try ResolverTarget(parsing: "tcp://127.0.0.1:9")
            prober.targets = streamTargets([closed])
            let refused = await StreamPath.run(prober: prober, target: closed, zone: zone, rate: 100, count: 5,
                                               uploadCharacters: 100, downloadBytes: 300, type: .txt)
            #expect(refused.answered == 0 && refused.lastConnectionFailure == "connectionRefused", "\(refused)")
            #expect(refused.connections.failed >= 1 && refused.connections.failures["connectionRefused"] != nil)
            await transports.shutdown()
            await engine.shutdown()
        }
    }

    /// `serve --listen [::]:53`: the responder on the IPv6 wildcard answers over UDP and TCP on ::1
    /// (issue 29 item 3; the port is the kernel's choice here, 53 needs root and is the lab's).
    @Test(.timeLimit(.minutes(1))) func serveOnTheIPv6WildcardAnswersOverUDPAndTCP() async throws {
        let server = ProbeServer(responder: responder, ratePerSourcePerSecond: 0, logger: Logger(label: "test"))
        let bound = try await server.start(listen: [try SocketAddress(ipAddress: "::", port: 0)])
        let port = try #require(bound.first?.port)
        let engine = QueryEngine(seed: 6)
        let transports = try ResolverTransports(seed: 6)
        let udp = try Endpoint(parsing: "[::1]:\(port)", defaultPort: 53)
        let tcp = try ResolverTarget(parsing: "tcp://[::1]:\(port)")
        var prober = Prober(engine: engine, key: key, timeout: .seconds(1))
        let overUDP = await prober.echo(udp, zone: zone)
        prober.targets = streamTargets([tcp])
        prober.transports = transports
        let overTCP = await prober.echo(tcp.endpoint, zone: zone)
        await transports.shutdown()
        await engine.shutdown()
        await server.stop()
        #expect(overUDP.ok, "UDP [::1]: \(String(describing: overUDP.failure)) \(overUDP.detail ?? "")")
        #expect(overTCP.ok, "TCP [::1]: \(String(describing: overTCP.failure)) \(overTCP.detail ?? "")")
    }
}
