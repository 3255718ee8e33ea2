import Base
import Testing
@testable import TunnelVerify

/// `scan --e2e`'s run for one pair: verify's engine, pinned to that pair, with no leak checks and
/// the bulk download asked for.
struct EndToEndTests {
    static let profile = """
        {"version":1,"name":"p","protocol":"iodine","domain":"t.example.com",
         "resolvers":[{"type":"udp","address":"192.0.2.1:53"},{"type":"udp","address":"192.0.2.2:53"}],
         "dns":["192.0.2.53"],"iodine":{"password":"secret"}}
        """

    @Test func eachPairPinsTheProfileAndTheCommandLine() throws {
        let profile = try Profile.parse(Array(Self.profile.utf8))
        var overrides = EngineOverrides()
        overrides.command = ["engine", "--via", "{resolver}", "--ip", "{resolver-ip}", "--zone", "{domain}", "--dev", "{tun}"]
        let bulk = BulkTransfer(url: try #require(WhoamiURL("http://198.51.100.2/bulk")), bytes: 4096, timeout: .seconds(5))
        var e2e = EndToEndConfiguration(profile: profile, engine: .command, overrides: overrides,
                                        whoami: try #require(WhoamiURL("http://198.51.100.2/")), bulk: bulk, seed: 40)
        e2e.deadline = .seconds(9)
        let resolver = try Endpoint(parsing: "203.0.113.7:53", defaultPort: 53)
        let run = e2e.verification(resolver: resolver, domain: "u.example.com", index: 2)
        #expect(run.profile.resolvers.map(\.endpoint) == [resolver])
        #expect(run.profile.domain == "u.example.com")
        #expect(run.overrides.command == ["engine", "--via", "203.0.113.7:53", "--ip", "203.0.113.7", "--zone", "u.example.com", "--dev", "{tun}"])
        #expect(run.checks.isEmpty, "end to end runs no leak checks")
        #expect(run.bulk == bulk && run.deadline == .seconds(9) && run.seed == 42)
        // The profile itself is left as it was for the next pair.
        #expect(e2e.profile.resolvers.count == 2 && e2e.overrides.command[2] == "{resolver}")
    }

    /// Issue 29: a pair scanned over DoH reaches a command engine with its URL and transport; the
    /// UDP-only engines refuse it by name instead of asking its address over UDP.
    @Test func aStreamPairGivesTheCommandItsURLAndUDPEnginesRefuseIt() throws {
        let profile = try Profile.parse(Array(Self.profile.utf8))
        var overrides = EngineOverrides()
        overrides.command = ["dnstt-client", "-{transport}", "{resolver-url}", "--host", "{resolver}", "{domain}"]
        let whoami = try #require(WhoamiURL("http://198.51.100.2/"))
        let e2e = EndToEndConfiguration(profile: profile, engine: .command, overrides: overrides, whoami: whoami, bulk: nil, seed: 1)
        let target = try ResolverTarget(parsing: "https://203.0.113.7/dns-query#doh.example")
        let run = e2e.verification(resolver: target.endpoint, domain: "u.example.com", index: 0, target: target)
        #expect(run.overrides.command == ["dnstt-client", "-https", "https://203.0.113.7:443/dns-query#doh.example", "--host",
                                          "203.0.113.7:443", "u.example.com"])
        #expect(e2e.refusal(transport: .https) == nil && e2e.refusal(transport: .udp) == nil)
        let iodine = EndToEndConfiguration(profile: profile, engine: .iodine, overrides: EngineOverrides(), whoami: whoami, bulk: nil, seed: 1)
        #expect(iodine.refusal(transport: .udp) == nil)
        for transport in [DNSTransport.tcp, .tls, .https] {
            #expect(iodine.refusal(transport: transport)?.contains("UDP only") == true)
        }
    }

    @Test func theHTTPHeaderEndIsFoundOrNot() {
        #expect(SandboxProbes.headerEnd(Array("HTTP/1.1 200 OK\r\nA: b\r\n\r\nbody".utf8)) == 25)
        #expect(SandboxProbes.headerEnd(Array("HTTP/1.1 200 OK\r\n".utf8)) == nil)
        #expect(SandboxProbes.headerEnd([]) == nil)
    }
}
