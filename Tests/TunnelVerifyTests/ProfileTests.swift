import Base
import Foundation
import Results
import Testing
import Reports
@testable import TunnelVerify

struct ProfileTests {
    static let valid = """
        {"version":1,"name":"Family MasterDnsVPN","protocol":"masterdns","domain":"m.vpn.example",
         "resolvers":[{"type":"udp","address":"203.0.113.10:53"}],"expectedExitIP":"203.0.113.10",
         "masterdns":{"encryptionLevel":"maximum","fecLevel":" Balanced ","fecDirection":"download"}}
        """

    @Test func validProfileIsParsedAndFECNormalized() throws {
        let profile = try Profile.parse(Array(Self.valid.utf8))
        #expect(profile.name == "Family MasterDnsVPN")
        #expect(profile.tunnelProtocol == .masterdns)
        #expect(profile.domain == "m.vpn.example")
        #expect(profile.resolvers.first?.endpoint == Endpoint(address: IPAddress("203.0.113.10")!, port: 53))
        #expect(profile.expectedExitIP == "203.0.113.10")
        #expect(profile.masterdns?.fec == FECPreset(level: "balanced", enabled: true, groupSize: 12, overheadPercent: 25,
                                                     symbolSize: 0, flushTimeoutMs: 20))
        #expect(profile.claimIPv6)
    }

    /// Each malformed field is named in the error.
    @Test(arguments: [
        (#"{"name":"x","protocol":"iodine"}"#, "version"),
        (#"{"version":2,"name":"x","protocol":"iodine"}"#, "version"),
        (#"{"version":1,"protocol":"iodine"}"#, "name"),
        (#"{"version":1,"name":"x","protocol":"carrier-pigeon"}"#, "protocol"),
        (#"{"version":1,"name":"x","protocol":"iodine","resolvers":[{"address":"1.2.3.4"}]}"#, "domain"),
        (#"{"version":1,"name":"x","protocol":"iodine","domain":"bad_dom ain.example","resolvers":[]}"#, "domain"),
        (#"{"version":1,"name":"x","protocol":"iodine","domain":"t.example"}"#, "resolvers"),
        (#"{"version":1,"name":"x","protocol":"iodine","domain":"t.example","resolvers":[{"address":"nope"}]}"#, "resolvers[0].address"),
        (#"{"version":1,"name":"x","protocol":"iodine","domain":"t.example","resolvers":[{"type":"doh","address":"1.2.3.4"}]}"#, "resolvers[0].type"),
        (#"{"version":1,"name":"x","protocol":"iodine","domain":"t.example","resolvers":["1.2.3.4"]}"#, "resolvers[0]"),
        (#"{"version":1,"name":"x","protocol":"openvpn","expectedExitIP":"300.1.1.1"}"#, "expectedExitIP"),
        (#"{"version":1,"name":"x","protocol":"openvpn","masterdns":{"fecLevel":"extreme"}}"#, "masterdns.fecLevel"),
        (#"{"version":1,"name":"x","protocol":"openvpn","masterdns":{"fecDirection":"sideways"}}"#, "masterdns.fecDirection"),
        (#"{"version":1,"name":"x","protocol":"openvpn","masterdns":{"encryptionLevel":7}}"#, "masterdns.encryptionLevel"),
        (#"{"version":1,"name":"x","protocol":"openvpn","dns":["resolver"]}"#, "dns[0]"),
        (#"{"version":1,"name":"x","protocol":"openvpn","claimIPv6":"yes"}"#, "claimIPv6"),
        (#"{"version":1,"name":"x","protocol":"openvpn","iodine":{"extraArguments":[1]}}"#, "iodine.extraArguments[0]"),
        (#"[1,2]"#, "(document)"),
        (#"{"version":1,"#, "(document)"),
    ])
    func malformedFieldIsNamed(document: String, field: String) {
        #expect(throws: ProfileError.self) { try Profile.parse(Array(document.utf8)) }
        do {
            _ = try Profile.parse(Array(document.utf8))
        } catch {
            #expect(error.field == field, "\(error)")
        }
    }

    @Test func engineSettingsNameTheirFields() throws {
        let profile = try Profile.parse(Array(#"{"version":1,"name":"x","protocol":"iodine","domain":"t.example","resolvers":[{"address":"192.0.2.1"}]}"#.utf8))
        #expect { try Engine.make(.iodine, profile: profile, overrides: EngineOverrides()) } throws: { error in
            (error as? ProfileError)?.field == "iodine.password"
        }
        var overrides = EngineOverrides()
        overrides.password = "pw"
        let engine = try Engine.make(.iodine, profile: profile, overrides: overrides)
        #expect(engine.carriers == [Endpoint(address: IPAddress("192.0.2.1")!, port: 53)])
        #expect(throws: ProfileError.self) { try Engine.make(.openvpn, profile: profile, overrides: overrides) }
    }

    @Test func fecLevelsNormalizeToPresets() {
        #expect(FECPreset.normalized("OFF")?.level == "none")
        #expect(FECPreset.normalized("aggressive")?.groupSize == 16)
        #expect(FECPreset.normalized("max") == nil)
    }

    @Test func uplinkPacketClassification() {
        // Ethernet + IPv4 + UDP to 198.18.0.1:53 with a query for x.t.example: carrier; other name: dns.
        func frame(_ name: String) -> [UInt8] {
            let query: [UInt8] = DNSQuery.make(id: 1, name: name, type: 1) ?? []
            let udp: [UInt8] = [0x9c, 0x40, 0, 53, UInt8((8 + query.count) >> 8), UInt8((8 + query.count) & 0xff), 0, 0] + query
            var ip: [UInt8] = [0x45, 0, UInt8((20 + udp.count) >> 8), UInt8((20 + udp.count) & 0xff), 0, 0, 0, 0, 64, 17, 0, 0,
                               198, 19, 0, 2, 198, 18, 0, 1]
            ip += udp
            return [UInt8](repeating: 0, count: 12) + [0x08, 0x00] + ip
        }
        let carrier = [Endpoint(address: IPAddress("198.18.0.1")!, port: 53)]
        #expect(UplinkPacket.decode(frame("abc.t.example"), atMs: 0, carriers: carrier, carrierDomain: "t.example").kind == .carrier)
        let leak = UplinkPacket.decode(frame("leak.other.example"), atMs: 5, carriers: carrier, carrierDomain: "t.example")
        #expect(leak.kind == .dns)
        #expect(leak.summary.contains("198.18.0.1:53 DNS A leak.other.example"))
        #expect(UplinkPacket.decode([1, 2, 3], atMs: 0, carriers: carrier, carrierDomain: nil).kind == .other)
    }

    @Test func splitEntriesArePrefixesOfBothFamiliesOrDomains() throws {
        let base = #"{"version":1,"name":"x","protocol":"iodine","domain":"t.example","resolvers":[{"address":"192.0.2.1"}]"#
        let good = try Profile.parse(Array((base + #","split":{"include":["198.51.100.0/24","2001:DB8:5::/48","In.Split.Test."]}}"#).utf8))
        let split = try #require(good.split)
        #expect(split.entries == ["198.51.100.0/24", "2001:db8:5::/48", "in.split.test"])
        #expect(split.prefixes.map(\.family) == [4, 6] && split.domains == ["in.split.test"])
        let exclude = try Profile.parse(Array((base + #","split":{"exclude":["198.51.100.0/24"]}}"#).utf8))
        #expect(exclude.split == Profile.Split(mode: .exclude, entries: ["198.51.100.0/24"]))
        for (text, field, words) in [
            (#","split":{"include":["198.51.100.0/33"]}}"#, "split.include[0]", "outside 0...32"),
            (#","split":{"include":["198.18.2.0/24","2001:db8::/129"]}}"#, "split.include[1]", "outside 0...128"),
            (#","split":{"include":["198.51.100.7/24"]}}"#, "split.include[0]", "198.51.100.0/24"),
            (#","split":{"exclude":["2001:db8::1"]}}"#, "split.exclude[0]", "2001:db8::1/128"),
            (#","split":{"include":["x.test","bad_-.name-"]}}"#, "split.include[1]", "not a domain name"),
            (#","split":{"include":["1.2.3"]}}"#, "split.include[0]", "is not an IPv4 prefix"),
            (#","split":{"include":["single"]}}"#, "split.include[0]", "two labels"),
            (#","split":{"include":["a"],"exclude":["b"]}}"#, "split", "exactly one"),
            (#","split":{"include":[]}}"#, "split.include", "is empty"),
        ] {
            do {
                _ = try Profile.parse(Array((base + text).utf8))
                Issue.record("accepted \(text)")
            } catch {
                #expect(error.description.contains(field) && error.description.contains(words), "\(error)")
            }
        }
    }
}
