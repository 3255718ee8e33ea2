import Base
import Foundation
import Reports
import Results
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

    /// dnstt-server answers only its own domain: `--e2e-domain profile` (dnstt's default) runs the
    /// engine on the profile's tunnel domain through each pair's resolver, not on the probe domain.
    @Test func dnsttRunsOnTheProfilesDomainThroughThePairsResolver() throws {
        let profile = try Profile.parse(Array(DnsttEngineTests.profile(resolver: #"{"type":"udp","address":"198.18.0.1:53"}"#).utf8))
        let whoami = try #require(WhoamiURL("http://198.18.2.2/"))
        var e2e = EndToEndConfiguration(profile: profile, engine: .dnstt, overrides: EngineOverrides(), whoami: whoami, bulk: nil, seed: 1)
        let impaired = try Endpoint(parsing: "198.18.0.53:53", defaultPort: 53)
        #expect(e2e.verification(resolver: impaired, domain: "vpn.lab.test", index: 0).profile.domain == "vpn.lab.test")
        e2e.engineDomain = "t.lab.test"
        let run = e2e.verification(resolver: impaired, domain: "vpn.lab.test", index: 0)
        #expect(run.profile.domain == "t.lab.test" && run.profile.resolvers.map(\.endpoint) == [impaired])
        let engine = try Engine.make(.dnstt, profile: run.profile, overrides: run.overrides)
        #expect(engine.argv(program: "dnstt-client", sandbox: Sandbox(stateRoot: "/nonexistent"))
            == ["dnstt-client", "-udp", "198.18.0.53:53", "-pubkey", DnsttEngineTests.pubkey, "t.lab.test", "127.0.0.1:7000"])
        #expect(engine.carrierDomain == "t.lab.test")
    }

    /// A pair scanned over DoT or DoH runs dnstt over the same transport (`-dot`, `-doh`), with the
    /// pair's server name and DoH path; plain TCP, which dnstt does not speak, is refused by name.
    @Test func dnsttRunsThroughADoTOrDoHPairInItsTransport() throws {
        let profile = try Profile.parse(Array(DnsttEngineTests.profile(resolver: #"{"type":"udp","address":"198.18.0.1:53"}"#).utf8))
        let whoami = try #require(WhoamiURL("http://198.18.2.2/"))
        var e2e = EndToEndConfiguration(profile: profile, engine: .dnstt, overrides: EngineOverrides(), whoami: whoami, bulk: nil, seed: 1)
        e2e.engineDomain = "t.lab.test"
        #expect(e2e.refusal(transport: .tls) == nil && e2e.refusal(transport: .https) == nil && e2e.refusal(transport: .udp) == nil)
        #expect(e2e.refusal(transport: .tcp)?.contains("not plain TCP") == true)
        let sandbox = Sandbox(stateRoot: "/nonexistent")
        let doh = try ResolverTarget(parsing: "https://198.18.0.1/q#dns.lab.test")
        let overDoH = e2e.verification(resolver: doh.endpoint, domain: "vpn.lab.test", index: 0, target: doh)
        #expect(overDoH.profile.resolvers.map(\.type) == ["https"] && overDoH.profile.resolvers.first?.path == "/q")
        let dohArgv = try Engine.make(.dnstt, profile: overDoH.profile, overrides: overDoH.overrides).argv(program: "dnstt-client", sandbox: sandbox)
        let dohURL = try #require(dohArgv.firstIndex(of: "-doh").map { dohArgv[$0 + 1] }, "\(dohArgv)")
        #expect(dohURL.hasPrefix("https://") && dohURL.contains("/q"), "\(dohArgv)")
        let dot = try ResolverTarget(parsing: "tls://198.18.0.1#dns.lab.test")
        let overDoT = e2e.verification(resolver: dot.endpoint, domain: "vpn.lab.test", index: 1, target: dot)
        let dotArgv = try Engine.make(.dnstt, profile: overDoT.profile, overrides: overDoT.overrides).argv(program: "dnstt-client", sandbox: sandbox)
        #expect(dotArgv.firstIndex(of: "-dot").map { dotArgv[$0 + 1] } == "dns.lab.test:853", "\(dotArgv)")
        // A profile made for a DoT resolver (its CA file) still runs through a UDP pair: the CA
        // file is for TLS and is left out there (dnstt refuses a caFile with a udp resolver).
        let ca = FileManager.default.temporaryDirectory.appendingPathComponent("tp-e2e-ca-\(UUID().uuidString).pem").path
        #expect(FileManager.default.createFile(atPath: ca, contents: Data("x".utf8)))
        defer { try? FileManager.default.removeItem(atPath: ca) }
        let tlsProfile = try Profile.parse(Array(DnsttEngineTests.profile(
            resolver: #"{"type":"tls","address":"198.18.0.1:853"}"#,
            dnstt: #"{"pubkey":"\#(DnsttEngineTests.pubkey)","caFile":"\#(ca)"}"#).utf8))
        let withCA = EndToEndConfiguration(profile: tlsProfile, engine: .dnstt, overrides: EngineOverrides(), whoami: whoami, bulk: nil, seed: 1)
        let udpPair = try Endpoint(parsing: "198.18.0.1:53", defaultPort: 53)
        let overUDP = withCA.verification(resolver: udpPair, domain: "vpn.lab.test", index: 2)
        #expect(try Engine.make(.dnstt, profile: overUDP.profile, overrides: overUDP.overrides).argv(program: "dnstt-client", sandbox: sandbox)
            .contains("-udp"))
        let overTLS = withCA.verification(resolver: dot.endpoint, domain: "vpn.lab.test", index: 3, target: dot)
        #expect(overTLS.profile.engines["dnstt"]?.fields["caFile"] == ca)
        // Another engine still runs over UDP only.
        let iodine = EndToEndConfiguration(profile: try Profile.parse(Array(Self.profile.utf8)), engine: .iodine,
                                           overrides: EngineOverrides(), whoami: whoami, bulk: nil, seed: 1)
        #expect(iodine.verification(resolver: dot.endpoint, domain: "u.example.com", index: 0, target: dot).profile.resolvers.map(\.type) == ["udp"])
    }

    /// The live run of `scan --e2e --e2e-engine dnstt` in the lab (Fixtures/dnstt/scan-e2e.json,
    /// README there): the real dnstt through the direct resolver and through the impairment relay
    /// (30 ms each way, 2 % of answers lost), on the profile's domain, ranked by measured goodput.
    @Test func recordedDnsttRunRanksTheResolversByGoodput() throws {
        let url = try #require(Bundle.module.url(forResource: "Fixtures/dnstt/scan-e2e", withExtension: "json"))
        let report = try JSONDecoder().decode(ScanReport.self, from: Data(contentsOf: url))
        let e2e = try #require(report.endToEnd)
        #expect(e2e.engine == "dnstt" && e2e.engineDomain == "d.t.lab.test")
        #expect(e2e.runs.map(\.resolver) == ["198.18.0.1:53", "198.18.0.53:53"] && e2e.runs.map(\.rank) == [1, 2])
        #expect(e2e.runs.allSatisfy { $0.ok && $0.domain == "vpn.lab.test" && $0.bulkBytes == 1_048_576 })
        // Each goodput is the body bytes over the transfer's time (RFC 2647 3.17), as measured.
        for run in e2e.runs {
            let (bytes, ms, goodput) = (try #require(run.bulkBytes), try #require(run.bulkMs), try #require(run.goodputBytesPerSecond))
            #expect(abs(Double(bytes) / (ms / 1000) - goodput) < 1)
        }
        let goodput = e2e.runs.compactMap(\.goodputBytesPerSecond)
        #expect(goodput[0] > 10 * goodput[1], "the impaired resolver moved \(goodput[1]) B/s, the direct one \(goodput[0])")
        // The ranking comes from the figures, whatever order the runs were made in.
        let again = ScanEndToEnd(engine: e2e.engine, requested: e2e.requested, selection: e2e.selection, firstDataURL: e2e.firstDataURL,
                                 bulkURL: e2e.bulkURL, bulkBytes: e2e.bulkBytes, deadlineMs: e2e.deadlineMs, runs: e2e.runs.reversed(),
                                 engineDomain: e2e.engineDomain)
        #expect(again.runs.map(\.resolver) == e2e.runs.map(\.resolver))
        #expect(report.markdown().contains("The engine ran on the profile's tunnel domain d.t.lab.test through each pair's resolver"))
    }

    @Test func theHTTPHeaderEndIsFoundOrNot() {
        #expect(SandboxProbes.headerEnd(Array("HTTP/1.1 200 OK\r\nA: b\r\n\r\nbody".utf8)) == 25)
        #expect(SandboxProbes.headerEnd(Array("HTTP/1.1 200 OK\r\n".utf8)) == nil)
        #expect(SandboxProbes.headerEnd([]) == nil)
    }
}
