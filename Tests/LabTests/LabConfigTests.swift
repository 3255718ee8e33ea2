import Foundation
@testable import Lab
import Testing

/// The parts of the lab that need neither root nor unbound.
@Suite struct LabConfigTests {
    @Test func defaultsMatchTheDocumentedLab() {
        let config = LabConfig(serverCommand: ["/usr/bin/tunnelprobe", "serve"])
        #expect(config.name == "default" && config.domain == "vpn.lab.test")
        #expect(config.resolverUDPLimit == nil && !config.resolverCapsForID && config.qnameMinimisation)
        #expect(config.stateRoot == "/run/tunnelprobe/labs" && config.responderReadiness == .udpListening)
    }

    @Test(arguments: ["", "UPPER", "toolongname", "a-b", "a.b", "ümlaut", "a b"])
    func invalidNamesAreRejectedBeforeAnythingHappens(name: String) async {
        await #expect(throws: LabError(.invalidName, "")) {
            try await Lab.up(LabConfig(name: name, serverCommand: ["x"]), logger: LabFixture.logger)
        }
        await #expect(throws: LabError(.invalidName, "")) { try await Lab.down(name: name, logger: LabFixture.logger) }
        await #expect(throws: LabError(.invalidName, "")) { try await Lab.exec(name: name, command: ["true"]) }
        #expect(await Lab.status(name: name) == nil)
    }

    @Test(arguments: ["a", "default", "12345678", "x9"])
    func validNamesKeepInterfaceNamesShort(name: String) throws {
        try LabConfig.validate(name: name)
        let topology = LabTopology(name: name)
        for link in topology.links { #expect(link.utf8.count <= 15, "\(link)") }
        for role in Lab.Role.allCases { #expect(topology.namespace(role).hasPrefix("tp-\(name)-")) }
    }

    @Test func otherSettingsAreChecked() {
        var config = LabConfig(name: "ok", serverCommand: ["/bin/true"])
        for domain in ["", "single", "Upper.case.test", "a..b", "-a.test", "a_b.test", String(repeating: "a", count: 64) + ".test"] {
            config.domain = domain
            #expect(throws: LabError(.invalidConfig, ""), "\(domain)") { try config.validate() }
        }
        config.domain = "vpn.lab.test"
        for limit in [0, 127, 65536] {
            config.resolverUDPLimit = limit
            #expect(throws: LabError(.invalidConfig, "")) { try config.validate() }
        }
        config.resolverUDPLimit = 777
        config.serverCommand = []
        #expect(throws: LabError(.invalidConfig, "")) { try config.validate() }
        config.serverCommand = ["/bin/true"]
        config.stateRoot = "relative"
        #expect(throws: LabError(.invalidConfig, "")) { try config.validate() }
        config.stateRoot = "/tmp/labs"
        #expect(throws: Never.self) { try config.validate() }
    }

    @Test func unboundConfigurationCarriesTheOptions() {
        var config = LabConfig(name: "u", resolverUDPLimit: 777, resolverCapsForID: true, qnameMinimisation: false, serverCommand: ["x"])
        var text = UnboundConfiguration(config: config, stateDirectory: "/run/tunnelprobe/labs/u").rendered()
        for line in [
            "server:", "    interface: 0.0.0.0", "    interface-automatic: yes", "    do-ip6: no",
            "    access-control: 198.18.0.0/24 allow", "    module-config: \"iterator\"", "    edns-buffer-size: 4096",
            "    max-udp-size: 777", "    use-caps-for-id: yes", "    qname-minimisation: no", "    verbosity: 1",
            "    local-zone: \"test.\" nodefault", "    do-daemonize: no", "    pidfile: \"/run/tunnelprobe/labs/u/unbound.pid\"",
            "stub-zone:", "    name: \"vpn.lab.test.\"", "    stub-addr: 198.18.1.2@53",
        ] {
            #expect(text.split(separator: "\n").contains(Substring(line)), "missing: \(line)")
        }
        config.resolverUDPLimit = nil
        config.domain = "t.example.com"
        text = UnboundConfiguration(config: config, stateDirectory: "/s").rendered()
        #expect(!text.contains("max-udp-size") && !text.contains("local-zone"))
    }

    @Test func udpSocketTableFindsTheListener() {
        let table = """
              sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
             1234: 020112C6:0035 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 11 2 0000000000000000 0
             1235: 00000000:14E9 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 12 2 0000000000000000 0
            """
        #expect(UDPSocketTable.hexAddress("198.18.1.2") == "020112C6")
        #expect(UDPSocketTable.hasSocket(in: table, address: "198.18.1.2", port: 53))
        #expect(!UDPSocketTable.hasSocket(in: table, address: "198.18.1.3", port: 53))
        #expect(UDPSocketTable.hasSocket(in: table, address: "198.18.1.3", port: 0x14E9))  // the wildcard
        #expect(!UDPSocketTable.hasSocket(in: table.replacingOccurrences(of: "020112C6:0035", with: "020112C6:0036"), address: "198.18.1.2", port: 53))
    }

    @Test func processStatIsParsedAfterTheCommandName() {
        let line = "4242 (a (weird) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10"
        #expect(SystemCalls.parseProcessStat(line) == .init(state: "S", startTime: 987654))
        #expect(SystemCalls.parseProcessStat("1 (x) Z 0") == nil)
        #expect(SystemCalls.process(SystemCalls.currentProcessID)?.isAlive == true)
    }

    @Test func probeMessagesFollowRFC1035() throws {
        let query = try DNSProbeMessage.query(id: 0xBEEF, name: "localhost.", type: 1, ednsPayloadSize: 1232)
        #expect(Array(query[0..<12]) == [0xBE, 0xEF, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 1])
        #expect(Array(query[12..<27]) == [9] + Array("localhost".utf8) + [0, 0, 1, 0, 1])
        #expect(Array(query[27...]) == [0, 0, 41, 0x04, 0xD0, 0, 0, 0, 0, 0, 0])
        let (response, name) = try #require(StandInResponder.respond(to: try DNSProbeMessage.query(id: 7, name: "300.x.vpn.lab.test", type: 16, ednsPayloadSize: 4096)))
        #expect(name == "300.x.vpn.lab.test" && response.count == 300)
        let reply = try #require(DNSProbeMessage.reply(response, id: 7, source: "198.18.0.1", port: 53))
        #expect(!reply.truncated && reply.answerCount == 1 && reply.responseCode == 0)
        #expect(DNSProbeMessage.reply(response, id: 8, source: "198.18.0.1", port: 53) == nil)
    }

    @Test func keysAreThirtyTwoRandomBytesInHex() {
        let key = Lab.randomKeyText()
        #expect(key.count == 65 && key.last == "\n" && key != Lab.randomKeyText())
    }

    @Test func statusEncodesWithTheDocumentedKeys() throws {
        let status = LabStatus(
            name: "x", namespaces: .init(client: "c", resolver: "r", server: "s"), clientAddress: "198.18.0.2",
            resolverAddress: "198.18.0.1", resolverPort: 53, resolverAliases: "198.18.4.0/22", serverAddress: "198.18.1.2",
            domain: "vpn.lab.test", keyFile: "/k", resolverUDPLimit: 777, stateDirectory: "/s",
            processes: [LabProcess(role: "unbound", pid: 3, running: true, log: "/s/unbound.log")], healthy: true
        )
        let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(status)) as? [String: Any]
        #expect(Set(json?.keys.map { $0 } ?? []) == [
            "name", "namespaces", "clientAddress", "resolverAddress", "resolverPort", "resolverAliases", "serverAddress",
            "domain", "keyFile", "resolverUDPLimit", "stateDirectory", "processes", "healthy",
        ])
        #expect(try JSONDecoder().decode(LabStatus.self, from: JSONEncoder().encode(status)) == status)
    }

    @Test func errorsAreOneLine() {
        let error = LabError(.commandFailed, "first\nsecond\r\nthird")
        #expect(error.message == "first second third" && error.description == error.message)
    }
}

extension LabConfigTests {
    @Test func aMissingToolNamesItsDebianPackage() {
        #expect(throws: LabError(.missingTool, "")) { try Toolbox.require("tunnelprobe-no-such-tool", package: "no-such-package") }
        do {
            _ = try Toolbox.require("tunnelprobe-no-such-tool", package: "no-such-package")
        } catch {
            #expect(error.message.contains("apt-get install no-such-package"))
        }
        #expect(Toolbox.locate("sh") != nil)
    }
}
