import Base
import EngineModels
import Foundation
import Results
import Testing
@testable import TunnelVerify

/// MasterDnsVPN as verify's engine: the profile contract, the handshake rule and the diagnostics,
/// on the client logs recorded through `verify` against a real server (Fixtures/masterdnsvpn/README.md).
struct MasterDnsVPNEngineTests {
    static func fixture(_ name: String) throws -> String {
        let url = try #require(Bundle.module.url(forResource: "Fixtures/masterdnsvpn/\(name)", withExtension: "log"))
        return try String(contentsOf: url, encoding: .utf8)
    }

    static func profile(fec: String = "balanced", encryption: String = "maximum") -> String {
        """
        {"version":1,"name":"Family MasterDnsVPN","protocol":"masterdns","domain":"m.lab.test",
         "resolvers":[{"type":"udp","address":"198.18.0.1:53"},{"type":"udp","address":"[2001:db8::53]:5353"}],
         "expectedExitIP":"198.18.2.1",
         "masterdns":{"encryptionLevel":"\(encryption)","fecLevel":"\(fec)","fecDirection":"download"}}
        """
    }

    // MARK: - the profile contract

    /// Each level of the seed's table, as its engine config shows it.
    @Test(arguments: [
        ("none", false, 8, 15, 25), ("conservative", true, 8, 15, 25), ("balanced", true, 12, 25, 20), ("aggressive", true, 16, 40, 15),
    ])
    func fecLevelNormalizesAsTheSeedsTable(level: String, enabled: Bool, group: Int, overhead: Int, flush: Int) throws {
        let profile = try Profile.parse(Array(Self.profile(fec: level).utf8))
        let config = try MasterDnsVPNConfig.normalize(profile, socks: nil)
        #expect(config.fec == FECPreset(level: level, enabled: enabled, groupSize: group, overheadPercent: overhead, symbolSize: 0, flushTimeoutMs: flush))
        let toml = config.toml(key: nil)
        #expect(toml.contains("level=\(level) enabled=\(enabled) groupSize=\(group) overheadPercent=\(overhead) symbolSize=0 flushTimeoutMs=\(flush) direction=download"))
        // The upstream client has no FEC key: the preset is never written as one.
        #expect(!toml.split(separator: "\n").contains { !$0.hasPrefix("#") && $0.uppercased().contains("FEC") })
    }

    @Test func profileBecomesTheClientsConfig() throws {
        let profile = try Profile.parse(Array(Self.profile().utf8))
        let config = try MasterDnsVPNConfig.normalize(profile, socks: nil)
        let lines = config.toml(key: "00112233445566778899aabbccddeeff").split(separator: "\n").map(String.init)
        #expect(lines.contains("DOMAINS = [\"m.lab.test\"]"))
        #expect(lines.contains { $0.hasPrefix("DATA_ENCRYPTION_METHOD = 5 ") })
        #expect(lines.contains("ENCRYPTION_KEY = \"00112233445566778899aabbccddeeff\""))
        #expect(lines.contains("PROTOCOL_TYPE = \"SOCKS5\""))
        #expect(lines.contains("LISTEN_IP = \"127.0.0.1\"") && lines.contains("LISTEN_PORT = 18000"))
        // No `dns` in the profile: the engine's own DNS listener takes the sandbox's DNS.
        #expect(lines.contains("LOCAL_DNS_ENABLED = true") && lines.contains("LOCAL_DNS_PORT = 53"))
        #expect(profile.sandboxDNS(for: .masterdnsvpn) == ["127.0.0.1"])
        #expect(profile.sandboxDNS(for: .iodine) == [])
        #expect(config.resolverFile == "198.18.0.1:53\n[2001:db8::53]:5353\n")
        // --print-config never shows the key.
        #expect(config.toml(key: nil).contains("ENCRYPTION_KEY = \"********\""))
        let printed = try EngineConfigText.normalized(profile: profile, engine: .masterdnsvpn, overrides: EngineOverrides())
        #expect(printed.contains("# client_resolvers.txt\n198.18.0.1:53\n"))
    }

    @Test(arguments: [("none", 0), ("XOR", 1), ("minimum", 1), ("chacha20", 2), ("aes-128-gcm", 3), (" AES-192-GCM ", 4), ("aes-256-gcm", 5), ("maximum", 5), ("3", 3)])
    func encryptionLevels(level: String, method: Int) throws {
        let profile = try Profile.parse(Array(Self.profile(encryption: level).utf8))
        #expect(try MasterDnsVPNConfig.normalize(profile, socks: nil).encryption.rawValue == method)
    }

    /// Every bad field of the masterdns section is named with its JSON path, in one line.
    @Test func everyBadMasterdnsFieldIsNamed() {
        let document = #"{"version":1,"name":"x","protocol":"masterdns","domain":"m.lab.test","resolvers":[{"address":"198.18.0.1"}],"masterdns":{"encryptionLevel":"strong","fecLevel":"extreme","fecDirection":"sideways"}}"#
        #expect { try Profile.parse(Array(document.utf8)) } throws: { error in
            guard let error = error as? ProfileError else { return false }
            let text = error.description
            return error.fields == ["masterdns.encryptionLevel", "masterdns.fecLevel", "masterdns.fecDirection"]
                && text.contains("\"strong\"") && text.contains("\"extreme\"") && text.contains("\"sideways\"") && !text.contains("\n")
        }
    }

    @Test func profileThatCannotRunTheEngineNamesItsField() throws {
        let iodine = try Profile.parse(Array(#"{"version":1,"name":"x","protocol":"iodine","domain":"t.example","resolvers":[{"address":"192.0.2.1"}]}"#.utf8))
        #expect { try MasterDnsVPNConfig.normalize(iodine, socks: nil) } throws: { ($0 as? ProfileError)?.field == "protocol" }
        let masterdns = try Profile.parse(Array(Self.profile().utf8))
        // No key: the engine cannot start, and the error says where a key goes.
        #expect { try Engine.make(.masterdnsvpn, profile: masterdns, overrides: EngineOverrides()) } throws: {
            ($0 as? ProfileError)?.field == "masterdnsvpn.password"
        }
        var overrides = EngineOverrides()
        overrides.password = "k"
        overrides.socks = Endpoint(address: IPAddress("192.0.2.7")!, port: 1080)
        #expect { try Engine.make(.masterdnsvpn, profile: masterdns, overrides: overrides) } throws: { ($0 as? ProfileError)?.field == "--socks" }
    }

    /// No protocol runs another protocol's engine; slipstream has none in verify.
    @Test func eachProtocolHasOnlyItsOwnEngine() {
        #expect(EngineKind.forProtocol(.masterdns) == .masterdnsvpn)
        #expect(EngineKind.forProtocol(.iodine) == .iodine)
        #expect(EngineKind.forProtocol(.dnstt) == .dnstt)
        #expect(EngineKind.forProtocol(.slipstream) == nil)
        #expect(EngineKind.forProtocol(.custom) == .command)
        for tunnelProtocol in Profile.TunnelProtocol.allCases {
            if let kind = EngineKind.forProtocol(tunnelProtocol), kind != .command {
                #expect(kind.rawValue.hasPrefix(tunnelProtocol.rawValue), "\(tunnelProtocol) -> \(kind)")
            }
        }
    }

    /// The bridge redirects the sandbox's TCP that its routes send into the TUN to redsocks, never
    /// the carriers' (that would loop the engine's own queries into itself) nor loopback (the
    /// engine's listeners); loading the rules again replaces them (a restart's bridge).
    @Test func bridgeLeavesCarriersAndLoopbackAlone() {
        let carriers = [Endpoint(address: IPAddress("198.18.0.1")!, port: 53), Endpoint(address: IPAddress("192.0.2.53")!, port: 5353),
                        Endpoint(address: IPAddress("2001:db8::53")!, port: 53)]
        let sandbox = Sandbox(stateRoot: "/nonexistent")
        let bridge = PacketBridge(sandbox: sandbox, socks: MasterDnsVPNConfig.defaultSOCKS, carriers: carriers)
        let lines = bridge.rules.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(lines.prefix(2) == ["table ip \(PacketBridge.table)", "delete table ip \(PacketBridge.table)"])
        let redirect = lines.firstIndex { $0 == "oifname \"\(sandbox.tunDevice)\" meta l4proto tcp redirect to :\(PacketBridge.port)" }
        let carrierReturn = lines.firstIndex(of: "ip daddr { 192.0.2.53, 198.18.0.1 } return")
        let loopback = lines.firstIndex(of: "ip daddr 127.0.0.0/8 return")
        #expect(redirect != nil && carrierReturn != nil && loopback != nil, "\(bridge.rules)")
        if let redirect, let carrierReturn, let loopback { #expect(carrierReturn < redirect && loopback < redirect) }
        #expect(bridge.config.contains("port = 18000;") && bridge.config.contains("type = socks5;"))
        // The bridge's pid is the owner of redsocks' listener, as `ss -p` shows it.
        #expect(PacketBridge.listenerPID("LISTEN 0 128 127.0.0.1:18001 0.0.0.0:* users:((\"redsocks\",pid=4242,fd=3))") == 4242)
        #expect(PacketBridge.listenerPID("LISTEN 0 128 127.0.0.1:18001 0.0.0.0:*") == nil)
    }

    // MARK: - the handshake rule on the recordings

    @Test(arguments: ["fec-none", "fec-conservative", "fec-balanced", "fec-aggressive"])
    func recordedGoodHandshakePasses(name: String) throws {
        let log = MasterDnsVPNLog(try Self.fixture(name))
        guard case .done(let evidence, let line) = log.handshake else {
            Issue.record("no handshake in \(name)")
            return
        }
        #expect(evidence.hasPrefix("session id ") && evidence.contains("1 accepted resolver (198.18.0.1:53)"))
        #expect(line.contains("Session Initialized Successfully"))
        #expect(log.sessionResolver == "198.18.0.1")
        #expect(log.uploadMTU == 113 && log.downloadMTU == 500)
        #expect(log.phase == "running")
    }

    /// A session id alone, or an accepted resolver alone, is not a handshake.
    @Test func bothHalvesOfTheRuleAreNeeded() throws {
        let text = try Self.fixture("fec-balanced")
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let withoutAcceptance = lines.filter { !$0.contains("Accepted (") }.joined(separator: "\n")
        #expect(MasterDnsVPNLog(withoutAcceptance).handshake == .pending)
        let withoutSession = lines.filter { !$0.contains("Session Initialized Successfully") }.joined(separator: "\n")
        #expect(MasterDnsVPNLog(withoutSession).handshake == .pending)
        #expect(MasterDnsVPNLog(withoutSession).missing.reason.hasPrefix("no session"))
        // Cut where the recorded run had its resolver but not yet its session.
        let cut = lines.prefix { !$0.contains("Session init attempt") }.joined(separator: "\n")
        #expect(MasterDnsVPNLog(cut).handshake == .pending)
        #expect(MasterDnsVPNLog(cut).accepted == ["198.18.0.1:53"])
    }

    @Test(arguments: ["wrong-key", "wrong-key-debug", "resolver-drop-debug"])
    func recordedNoResolverIsNamed(name: String) throws {
        let log = MasterDnsVPNLog(try Self.fixture(name))
        #expect(log.handshake == .pending)
        let missing = log.missing
        #expect(missing.reason.hasPrefix("no resolver accepted"), "\(missing.reason)")
        #expect(missing.reason.contains("198.18.0.1:53 UPLOAD_MTU"))
        #expect(missing.reason.components(separatedBy: "UPLOAD_MTU").count == 2, "each rejection once: \(missing.reason)")
        #expect(missing.line?.contains("No valid connections found after MTU testing") == true)
    }

    @Test func recordedServerRejectionIsNamed() throws {
        let log = MasterDnsVPNLog(try Self.fixture("server-busy"))
        #expect(log.handshake == .pending)
        #expect(log.accepted == ["198.18.0.1:53"])
        #expect(log.missing.reason == "no session: the server rejected the session")
        #expect(log.missing.line?.contains("session init busy: server is at capacity or rejected the request") == true)
    }

    @Test func recordedExitSaysWhy() throws {
        let log = MasterDnsVPNLog(try Self.fixture("exit-on-failure"))
        #expect(log.startupErrorLine == "Client startup failed: invalid LISTEN_PORT: 70000")
        #expect(log.missing.reason == "the client did not start")
    }

    /// Total: any text gives a value.
    @Test func anyTextParses() {
        for text in ["", "\n\n", "Accepted (", "Session Initialized Successfully (ID: ", "Total valid resolvers after MTU testing: x of",
                     String(repeating: "✅ Accepted (1/1): a via | ", count: 100), "[INFO] [INFO] Selected Synced Upload MTU: "] {
            let log = MasterDnsVPNLog(text)
            #expect(log.handshake == .pending || log.sessionID != nil)
            _ = log.missing
        }
    }

    // MARK: - diagnostics

    @Test func diagnosticsOfARecordedRun() throws {
        let fec = FECPreset.normalized("balanced")
        let d = EngineDiagnostics.masterDnsVPN(log: try Self.fixture("fec-balanced"), carrier: nil, fec: fec)
        #expect(d.enginePhase == "running")
        #expect(d.selectedResolver == "198.18.0.1")
        #expect(d.sessionID == "7")
        #expect(d.acceptedResolvers == 1 && d.rejectedResolvers == 0)
        #expect(d.fecRequested == fec)
        // What the client does not expose is null, each with its reason.
        for field in ["packetsUp", "packetsDown", "arqResends", "arqNacks", "fecNegotiated", "fecRecoveredPackets"] {
            #expect(d.unavailable[field]?.isEmpty == false, "\(field)")
        }
        #expect(d.arqResends == nil && d.fecNegotiated == nil && d.fecRecoveredPackets == nil)
        // Nulls are written as null, not left out.
        let json = String(decoding: try JSONEncoder().encode(d), as: UTF8.self)
        #expect(json.contains("\"arqNacks\":null") && json.contains("\"fecRecoveredPackets\":null"))
        let rows = d.rows
        #expect(rows.map(\.label).prefix(3) == ["engine phase", "selected resolver", "session id"])
        #expect(rows.first { $0.label == "ARQ resends" }?.why?.contains("no ARQ counter") == true)
    }

    @Test func diagnosticsOfAFailedRun() throws {
        let d = EngineDiagnostics.masterDnsVPN(log: try Self.fixture("wrong-key"), carrier: (up: 12, down: 0), fec: nil)
        #expect(d.sessionID == nil && d.unavailable["sessionID"] != nil)
        #expect(d.acceptedResolvers == 0)
        #expect(d.rejectedResolvers == 1)
        #expect(d.enginePhase == "mtu-test")
        #expect(d.packetsUp == 12)
    }
}
