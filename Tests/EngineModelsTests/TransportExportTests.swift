@testable import EngineModels
import Testing

/// Each engine's export names the transport the pair was measured over, in the engine's own form,
/// and the engines that speak only UDP say why a DoT or DoH pair is not listed.
@Suite struct TransportExportTests {
    func measured(_ resolver: String) -> PairMeasurement {
        PairMeasurement(resolver: resolver, domain: "abcde.fghi", longestName: 253,
                        responses: [.txt: ResponseMeasurement(bytes: 1232), .null: ResponseMeasurement(bytes: 1232)], upstreamEDNS: 1232)
    }

    var resolvers: [String] {
        ["192.0.2.2:53", "tcp://192.0.2.3:53", "tls://192.0.2.4:853#dot.example", "tls://[2001:db8::4]:853",
         "https://192.0.2.5:443/dns-query#doh.example", "https://[2001:db8::5]:8443/q"]
    }

    @Test func dnsttTakesUDPDoTAndDoHInItsFlags() {
        let model = DnsttModel()
        let text = model.exports(model.synced(resolvers.map(measured)))[0].text
        #expect(text.contains("\n-udp 192.0.2.2:53\n"))
        #expect(text.contains("# tcp://192.0.2.3:53: dnstt-client has no plain-TCP transport"))
        #expect(text.contains("\n-dot dot.example:853  # measured at 192.0.2.4:853\n"))
        #expect(text.contains("\n-dot [2001:db8::4]:853\n"))
        #expect(text.contains("\n-doh https://doh.example/dns-query  # measured at 192.0.2.5:443\n"))
        #expect(text.contains("\n-doh https://[2001:db8::5]:8443/q\n"))
    }

    @Test func udpOnlyEnginesSayWhyAStreamPairIsLeftOut() {
        let file = MasterDnsVPNExport.resolvers(resolvers, edition: "go")
        #expect(file.text.contains("\n192.0.2.2\n"))
        #expect(file.text.contains("# tls://192.0.2.4:853#dot.example: measured over tls; MasterDnsVPN asks its resolvers over UDP only, so it is not listed"))
        #expect(!file.text.contains("\n192.0.2.4"))
        let slip = SlipstreamModel()
        let slipText = slip.exports(slip.synced(resolvers.map(measured)))[0].text
        #expect(slipText.contains("--resolver 192.0.2.2:53") && slipText.contains("slipstream asks its resolvers over UDP only"))
        #expect(!slipText.contains("--resolver 192.0.2.5"))
    }

    @Test func resolverAddressReadsTheTransportForms() throws {
        let dot = try #require(ResolverAddress("tls://[2001:db8::4]:853#dot.example"))
        #expect(dot.transport == .tls && dot.host == "2001:db8::4" && dot.port == 853 && dot.target?.serverName == "dot.example")
        #expect(ResolverAddress("192.0.2.2")?.transport == .udp)
        #expect(ResolverAddress("tls://not an address") == nil)
    }
}
