@testable import Lab
import Testing

/// What the lab writes for each resolver it can run.
@Suite struct ResolverConfigurationTests {
    let command = ["/bin/true"]

    @Test func unboundAdvertises4096UpstreamUnlessToldOtherwise() {
        let plain = UnboundConfiguration(config: LabConfig(serverCommand: command), stateDirectory: "/run/x").rendered()
        #expect(plain.contains("edns-buffer-size: 4096"))
        let stock = LabConfig(resolverUDPLimit: 1400, serverCommand: command, resolverUpstreamEDNS: 1232)
        let text = UnboundConfiguration(config: stock, stateDirectory: "/run/x").rendered()
        #expect(text.contains("edns-buffer-size: 1232") && text.contains("max-udp-size: 1400"))
    }

    @Test func knotGetsItsLimitsAndTheStubZone() {
        let config = LabConfig(domain: "vpn.lab.test", resolverUDPLimit: 1111, qnameMinimisation: false, serverCommand: command,
                               resolverSoftware: .knot)
        let text = KnotConfiguration(config: config, stateDirectory: "/run/x").rendered()
        #expect(text.contains("net.bufsize(1111, 1232)"))
        #expect(text.contains("policy.STUB({'198.18.1.2@53'}), {todname('vpn.lab.test.')}"))
        #expect(text.contains("net.listen('198.18.0.1', 53"))
        #expect(text.contains("option('NO_MINIMIZE', true)"))
        let defaults = KnotConfiguration(config: LabConfig(serverCommand: command, resolverSoftware: .knot), stateDirectory: "/run/x")
        #expect(!defaults.rendered().contains("net.bufsize"))
        #expect(config.software.role == "kresd" && LabConfig(serverCommand: command).software == .unbound)
    }

    @Test func badResolverSettingsAreRefused() {
        #expect(throws: LabError.self) { try LabConfig(serverCommand: command, resolverUpstreamEDNS: 100).validate() }
        #expect(throws: LabError.self) {
            try LabConfig(serverCommand: command, tunnelDomain: "t.tunnel.test", resolverSoftware: .knot).validate()
        }
        #expect(throws: Never.self) { try LabConfig(serverCommand: command, resolverSoftware: .knot, resolverUpstreamEDNS: 1232).validate() }
    }
}
