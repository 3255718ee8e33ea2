import Foundation
@testable import Lab
import Testing

/// `lab up --tunnel-behind-responder`: iodined for the probe domain behind `serve --forward`.
extension LabConfigTests {
    @Test func theTunnelBehindTheResponderServesTheProbeDomainThroughOneDelegation() throws {
        let config = LabConfig(name: "f", serverCommand: ["x"], tunnelBehindResponder: true)
        #expect(config.forwardsTunnel && config.iodineDomain == "vpn.lab.test")
        #expect(throws: Never.self) { try config.validate() }
        let text = UnboundConfiguration(config: config, stateDirectory: "/s").rendered()
        // One stub zone, to the responder; the split names the tunnel lab's checks use are there.
        #expect(text.components(separatedBy: "stub-zone:").count == 2)
        #expect(text.contains("    stub-addr: 198.18.1.2@53") && text.contains("split.test"))
        #expect(TunnelServers.forwardedIodine == "198.18.1.2:5300")
        // Without it nothing changes: no tunnel servers, no split names.
        let plain = LabConfig(name: "p", serverCommand: ["x"])
        #expect(!plain.forwardsTunnel && plain.iodineDomain == nil && plain.tunnelBehindResponder == nil)
        #expect(!UnboundConfiguration(config: plain, stateDirectory: "/s").rendered().contains("split.test"))
        // It serves the probe domain: a separate tunnel domain, or knot, is a contradiction.
        #expect(throws: LabError.self) { try LabConfig(name: "f", serverCommand: ["x"], tunnelDomain: "t.lab.test", tunnelBehindResponder: true).validate() }
        #expect(throws: LabError.self) { try LabConfig(name: "f", serverCommand: ["x"], resolverSoftware: .knot, tunnelBehindResponder: true).validate() }
        // Saved states of labs made before the option still decode.
        let old = try JSONEncoder().encode(plain)
        #expect(try JSONDecoder().decode(LabConfig.self, from: old) == plain)
    }
}
