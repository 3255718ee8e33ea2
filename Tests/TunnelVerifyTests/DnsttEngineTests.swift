import Base
import DNSWire
import EngineModels
import Foundation
import Results
import Testing
@testable import TunnelVerify

/// dnstt as verify's engine: the profile contract, the client's command line, the handshake rule
/// and the failure reasons, on client logs recorded against the real dnstt-server behind the lab's
/// resolver (Fixtures/dnstt/README.md).
struct DnsttEngineTests {
    static func fixture(_ name: String) throws -> String {
        let url = try #require(Bundle.module.url(forResource: "Fixtures/dnstt/\(name)", withExtension: "log"))
        return try String(contentsOf: url, encoding: .utf8)
    }

    static let pubkey = "38b7767a7ef9266850d91c1345d0618ba0198386e017a25cc18ceb4ba759995a"

    static func profile(resolver: String = #"{"type":"udp","address":"198.18.0.1:53"}"#, dnstt: String = #"{"pubkey":"\#(DnsttEngineTests.pubkey)"}"#) -> String {
        """
        {"version":1,"name":"Family dnstt","protocol":"dnstt","domain":"t.lab.test",
         "resolvers":[\(resolver)],"expectedExitIP":"198.18.2.1","dnstt":\(dnstt)}
        """
    }

    static func engine(_ text: String, overrides: EngineOverrides = EngineOverrides()) throws -> TunnelVerify.Engine {
        try TunnelVerify.Engine.make(.dnstt, profile: try Profile.parse(Array(text.utf8)), overrides: overrides)
    }

    // MARK: - the profile contract and the command line

    @Test func dnsttProfileRunsDnsttAndNothingElse() throws {
        #expect(EngineKind.forProtocol(.dnstt) == .dnstt)
        // No other protocol runs dnstt's engine.
        for other in Profile.TunnelProtocol.allCases where other != .dnstt {
            #expect(EngineKind.forProtocol(other) != .dnstt)
        }
        #expect(EngineKind.dnstt.defaultSOCKS == DnsttClient.defaultListener)
        #expect(EngineKind.dnstt.bridgesTCP && EngineKind.masterdnsvpn.bridgesTCP && !EngineKind.iodine.bridgesTCP)
    }

    @Test(arguments: [
        (#"{"type":"udp","address":"198.18.0.1:53"}"#, ["-udp", "198.18.0.1:53"]),
        (#"{"type":"udp","address":"198.18.0.1"}"#, ["-udp", "198.18.0.1:53"]),
        (#"{"type":"tls","address":"198.18.0.1"}"#, ["-dot", "198.18.0.1:853"]),
        (#"{"type":"dot","address":"tls://198.18.0.1:8853"}"#, ["-dot", "198.18.0.1:8853"]),
        (#"{"type":"tls","address":"198.18.0.1#resolver.lab.test"}"#, ["-dot", "resolver.lab.test:853"]),
        (#"{"type":"https","address":"198.18.0.1"}"#, ["-doh", "https://198.18.0.1/dns-query"]),
        (#"{"type":"doh","address":"https://198.18.0.1:8443/q"}"#, ["-doh", "https://198.18.0.1:8443/q"]),
        (#"{"type":"https","address":"[2001:db8:18::53]"}"#, ["-doh", "https://[2001:db8:18::53]/dns-query"]),
    ])
    func resolverBecomesTheClientsTransport(resolver: String, expected: [String]) throws {
        let engine = try Self.engine(Self.profile(resolver: resolver))
        let argv = engine.argv(program: "/bin/dnstt-client", sandbox: Sandbox(stateRoot: "/nonexistent"))
        #expect(argv == ["/bin/dnstt-client"] + expected + ["-pubkey", Self.pubkey, "t.lab.test", "127.0.0.1:7000"])
        #expect(engine.carrierDomain == "t.lab.test")
        #expect(engine.carriers.map(\.host) == [resolver.contains("2001:db8") ? "2001:db8:18::53" : "198.18.0.1"])
    }

    @Test func keyFileListenerTLSFingerprintAndCA() throws {
        let key = FileManager.default.temporaryDirectory.appendingPathComponent("tp-dnstt-\(UUID().uuidString).pub").path
        try Self.pubkey.write(toFile: key, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: key) }
        var overrides = EngineOverrides()
        overrides.keyFile = key
        overrides.socks = try Endpoint(parsing: "127.0.0.1:1081", defaultPort: 1080)
        overrides.extraArguments = ["-mtu", "100"]
        let engine = try Self.engine(Self.profile(resolver: #"{"type":"https","address":"198.18.0.1"}"#,
                                                  dnstt: #"{"utls":"none","caFile":"\#(key)"}"#), overrides: overrides)
        let argv = engine.argv(program: "dnstt-client", sandbox: Sandbox(stateRoot: "/nonexistent"))
        #expect(argv == ["/usr/bin/env", "SSL_CERT_FILE=\(key)", "dnstt-client", "-doh", "https://198.18.0.1/dns-query",
                         "-pubkey-file", key, "-utls", "none", "-mtu", "100", "t.lab.test", "127.0.0.1:1081"])
    }

    @Test(arguments: [
        (#"{}"#, "dnstt.pubkey"),
        (#"{"pubkey":"38b7"}"#, "dnstt.pubkey"),
        (#"{"pubkey":"\#(String(repeating: "g", count: 64))"}"#, "dnstt.pubkey"),
        (#"{"pubkey":"\#(DnsttEngineTests.pubkey)","pubkeyFile":"/etc/hostname"}"#, "dnstt.pubkeyFile"),
        (#"{"pubkeyFile":"/nonexistent/server.pub"}"#, "dnstt.pubkeyFile"),
        (#"{"pubkey":"\#(DnsttEngineTests.pubkey)","caFile":"/etc/hostname"}"#, "dnstt.caFile"),
        (#"{"pubkey":"\#(DnsttEngineTests.pubkey)","utls":"a b"}"#, "dnstt.utls"),
    ])
    func badDnsttSectionNamesTheField(section: String, field: String) throws {
        #expect(throws: ProfileError.self) { try Self.engine(Self.profile(dnstt: section)) }
        do {
            _ = try Self.engine(Self.profile(dnstt: section))
        } catch let error as ProfileError {
            #expect(error.field == field, "\(error)")
        }
    }

    /// Only dnstt's client speaks DoT and DoH here: other protocols keep UDP-only resolvers.
    @Test func streamResolversOnlyForDnstt() throws {
        let dnstt = try Profile.parse(Array(Self.profile(resolver: #"{"type":"https","address":"198.18.0.1/dns"}"#).utf8))
        #expect(dnstt.resolvers.first?.type == "https" && dnstt.resolvers.first?.path == "/dns")
        let iodine = #"{"version":1,"name":"x","protocol":"iodine","domain":"t.lab.test","resolvers":[{"type":"tls","address":"198.18.0.1"}]}"#
        #expect(throws: ProfileError.self) { try Profile.parse(Array(iodine.utf8)) }
        let wrongScheme = Self.profile(resolver: #"{"type":"tls","address":"https://198.18.0.1/"}"#)
        #expect(throws: ProfileError.self) { try Profile.parse(Array(wrongScheme.utf8)) }
    }

    @Test func printConfigIsTheCommandLine() throws {
        let profile = try Profile.parse(Array(Self.profile().utf8))
        let text = try EngineConfigText.normalized(profile: profile, engine: .dnstt, overrides: EngineOverrides())
        #expect(text == "# dnstt-client command line (no config file)\ndnstt-client -udp 198.18.0.1:53 -pubkey \(Self.pubkey) t.lab.test 127.0.0.1:7000\n")
    }

    // MARK: - the handshake rule on the recordings

    @Test(arguments: ["udp-ok", "dot-ok", "doh-ok", "truncating"])
    func firstStreamIsTheHandshake(name: String) throws {
        let log = DnsttLog(try Self.fixture("\(name).client"))
        guard case .done(let evidence) = log.handshake else {
            Issue.record("no handshake in \(name)")
            return
        }
        #expect(evidence.contains("begin stream ") && evidence.contains("Noise handshake done, session \(log.session ?? "?")"))
        // The client's KCP MTU is the model's for the domain (ENGINES.md "client MTU").
        #expect(log.effectiveMTU == DnsttModel.uploadMTU(domainLength: WireArithmetic.domainLength("t.lab.test")))
        #expect(log.effectiveMTU == 136)
        #expect(log.startupErrorLine == nil)
    }

    /// Before the first stream the log shows only `begin session`: that line is not the handshake.
    @Test func beginSessionAloneIsPending() throws {
        let ok = try Self.fixture("udp-ok.client")
        let head = ok.split(separator: "\n").prefix(2).joined(separator: "\n")
        #expect(DnsttLog(head).handshake == .pending)
        #expect(DnsttLog(head).session == "d4cccd4c")
    }

    /// The server's side of the recordings: its KCP MTU is the model's for its -mtu (900: 601;
    /// the default 1232: 932), and a wrong key fails its Noise decryption.
    @Test func serverLogsMatchTheModel() throws {
        #expect(try Self.fixture("udp-ok.server").contains("effective MTU \(DnsttModel.downloadMTU(limit: 900))"))
        #expect(DnsttModel.downloadMTU(limit: 900) == 601)
        #expect(try Self.fixture("truncating.server").contains("effective MTU \(DnsttModel.downloadMTU(limit: 1232))"))
        #expect(try Self.fixture("wrong-key.server").contains("acceptStreams: chacha20poly1305: message authentication failed"))
    }

    @Test(arguments: ["wrong-key", "resolver-drop", "server-absent"])
    func noReplyNamesTheThreeCauses(name: String) throws {
        let text = try Self.fixture("\(name).client")
        let log = DnsttLog(text)
        #expect(log.handshake == .pending)
        let reason = log.timeoutReason
        #expect(reason.reason.hasPrefix("handshake timeout: the Noise handshake got no reply"))
        #expect(reason.reason.contains("wrong server public key") && reason.reason.contains("drops") && reason.reason.contains("no dnstt-server"))
        #expect(reason.words?.contains("begin session") == true)
    }

    // MARK: - the wire tells apart what the log cannot (Fixtures/dnstt/wire-*, recorded by verify)

    /// The recording's resolver: the lab's impairment relay for the dropping and truncating ones.
    static func resolver(_ name: String) throws -> Endpoint {
        try Endpoint(parsing: ["resolver-drop", "truncating"].contains(name) ? "198.18.0.53:53" : "198.18.0.1:53", defaultPort: 53)
    }

    static func tally(_ name: String) throws -> DnsttCarrierTally {
        let url = try #require(Bundle.module.url(forResource: "Fixtures/dnstt/wire-\(name)", withExtension: "carrier.pcap"))
        return DnsttCarrierTally(pcap: url.path, resolver: try resolver(name), domain: "d.t.lab.test")
    }

    /// The three handshake timeouts whose client logs are the same (`begin session`, then nothing)
    /// each get their own reason from the client's carrier: the server's TXT answers (wrong key),
    /// no answer even to verify's control query (a dropping resolver), the control query answered
    /// but none of the client's (no server behind the resolver).
    @Test(arguments: [
        ("wrong-key", "handshake timeout: wrong server public key: dnstt-server answered"),
        ("resolver-drop", "handshake timeout: the resolver drops the queries"),
        ("server-absent", "handshake timeout: no dnstt-server answers for d.t.lab.test: the resolver answered a control query"),
    ])
    func carrierNamesTheCause(name: String, reason: String) throws {
        let tally = try Self.tally(name)
        #expect(tally.queries > 0)
        let named = try #require(tally.handshakeFailure(resolver: try Self.resolver(name), domain: "d.t.lab.test"))
        #expect(named.hasPrefix(reason), "\(named)")
        // verify's control query at the deadline is in the recording: answered only by a live resolver.
        #expect(tally.controlAnswered == (name == "resolver-drop" ? false : true))
        if name != "wrong-key" { #expect(tally.answers == 0) }
        // The client's log of the same run is the three-cause one: the wire is what tells them apart.
        let log = DnsttLog(try Self.fixture("wire-\(name).client"))
        #expect(log.handshake == .pending && log.session != nil)
        #expect(log.timeoutReason.reason.contains("wrong server public key, a resolver that drops"))
    }

    /// A passing run: the server's answers, no truncation; a truncating resolver's TC answers are
    /// the data stall's evidence.
    @Test func passingAndTruncatingCarriers() throws {
        let ok = try Self.tally("ok")
        #expect(ok.tunnelAnswers > 0 && ok.truncated == 0 && ok.errors.isEmpty && ok.truncationEvidence == nil)
        let truncating = try Self.tally("truncating")
        #expect(truncating.truncated > 0)
        #expect(truncating.truncationEvidence == "the resolver truncated 18 of 117 answers (TC) on the wire")
        // The same answers through the wrong resolver address are not the carrier's.
        let elsewhere = DnsttCarrierTally(pcap: try #require(Bundle.module.url(forResource: "Fixtures/dnstt/wire-truncating", withExtension: "carrier.pcap")).path,
                                          resolver: try Endpoint(parsing: "198.18.0.1:53", defaultPort: 53), domain: "d.t.lab.test")
        #expect(elsewhere.answers == 0 && elsewhere.truncated == 0)
    }

    /// A resolver with no server behind it that says so (SERVFAIL, REFUSED): not recorded in the lab
    /// (its unbound stayed silent), so made here from the same frame layout as the recordings.
    @Test func errorAnswersNameTheAbsentServer() throws {
        let resolver = try Endpoint(parsing: "198.18.0.1:53", defaultPort: 53)
        func frame(query: Bool, id: UInt16, rcode: UInt8) throws -> [UInt8] {
            var dns = DNSMessage.queryBytes(id: id, name: try DNSName("aaaaaaaaaaaaa.d.t.lab.test"), type: .txt)
            if !query { dns[2] |= 0x80; dns[3] = (dns[3] & 0xf0) | rcode }
            let (client, server): ([UInt8], [UInt8]) = ([198, 19, 0, 2], [198, 18, 0, 1])
            let ip: [UInt8] = [0x45, 0, 0, 0, 0, 0, 0, 0, 64, 17, 0, 0] + (query ? client + server : server + client)
            let udp: [UInt8] = query ? [0xc3, 0x50, 0, 53, 0, 0, 0, 0] : [0, 53, 0xc3, 0x50, 0, 0, 0, 0]
            return Array(repeating: 0, count: 12) + [0x08, 0x00] + ip + udp + dns
        }
        let frames = [try frame(query: true, id: 1, rcode: 0), try frame(query: false, id: 1, rcode: 2),
                      try frame(query: true, id: 2, rcode: 0), try frame(query: false, id: 2, rcode: 5)]
        let tally = DnsttCarrierTally(frames: frames, resolver: resolver, domain: "d.t.lab.test")
        #expect(tally.queries == 2 && tally.answers == 2 && tally.tunnelAnswers == 0 && tally.errors == ["SERVFAIL": 1, "REFUSED": 1])
        #expect(tally.handshakeFailure(resolver: resolver, domain: "d.t.lab.test")
            == "handshake timeout: no dnstt-server answers for d.t.lab.test: the resolver answered REFUSED x1, SERVFAIL x1 (2 queries, 2 answers); the server is absent or unreachable from the resolver")
    }

    /// No query seen (a replay, a capture that failed): the tally says nothing, the log's reason
    /// stands. Frames that are not the client's DNS are skipped; any bytes are total.
    @Test func carrierTallyIsTotal() throws {
        let resolver = try Endpoint(parsing: "198.18.0.1:53", defaultPort: 53)
        #expect(DnsttCarrierTally(frames: [], resolver: resolver, domain: "d.t.lab.test").handshakeFailure(resolver: resolver, domain: "d.t.lab.test") == nil)
        let junk: [[UInt8]] = [[], [0x08, 0x00], Array(repeating: 0, count: 14), Array(repeating: 0xff, count: 80),
                               Array(repeating: 0, count: 12) + [0x08, 0x00, 0x45] + Array(repeating: 0, count: 30)]
        #expect(DnsttCarrierTally(frames: junk, resolver: resolver, domain: "d.t.lab.test") == DnsttCarrierTally())
        #expect(DnsttCarrierTally(pcap: "/nonexistent/carrier.pcap", resolver: resolver, domain: "d.t.lab.test") == DnsttCarrierTally())
        #expect(DnsttCarrierCapture.path(beside: "/out/uplink.pcap") == "/out/uplink.carrier.pcap")
    }

    @Test func dohRefusalAndUntrustedCertificateFailAtOnce() throws {
        guard case .failed(let reason, let words) = DnsttLog(try Self.fixture("doh-refused.client")).handshake else {
            Issue.record("DoH refusal not a failure")
            return
        }
        #expect(reason.hasPrefix("the DoH server refused the queries") && words.contains("got \"404 Not Found\""))
        guard case .failed(let tlsReason, let tlsWords) = DnsttLog(try Self.fixture("doh-untrusted.client")).handshake else {
            Issue.record("untrusted certificate not a failure")
            return
        }
        #expect(tlsReason.contains("not trusted") && tlsWords.contains("x509: certificate signed by unknown authority"))
    }

    @Test func startupErrorsAndTotality() throws {
        #expect(DnsttLog("pubkey format error: encoding/hex: invalid byte: U+0067 'g'\n").startupErrorLine?.hasPrefix("pubkey format error") == true)
        #expect(DnsttLog("2026/11/27 04:23:09 opening local listener: listen tcp 127.0.0.1:7000: bind: address already in use").startupErrorLine != nil)
        // Any text yields a value: no evidence, no crash.
        for text in ["", "\n\n", "2026/11/27", "begin stream", "effective MTU x", String(repeating: "\u{0}", count: 40)] {
            let log = DnsttLog(text)
            #expect(log.effectiveMTU == nil)
        }
        #expect(DnsttLog("2026/11/27 04:23:09 effective MTU 136").effectiveMTU == 136)
    }

    @Test func truncationHintOnlyOverUDP() throws {
        let udp = try Self.engine(Self.profile())
        #expect(udp.dataStallHint(log: "")?.contains("-mtu") == true)
        let doh = try Self.engine(Self.profile(resolver: #"{"type":"https","address":"198.18.0.1"}"#))
        #expect(doh.dataStallHint(log: "") == nil)
        let found = udp.diagnostics(log: try Self.fixture("udp-ok.client"))
        #expect(found.resolver == "udp 198.18.0.1:53" && found.session == "session d4cccd4c")
    }

    /// dnstt's DoT/DoH carrier is a TCP connection to the resolver: in the uplink capture it is the
    /// carrier, not a DNS leak; TCP to a port-53 carrier stays DNS of its own (recorded live: before
    /// this rule a DoT run counted its TLS packets as 65 leaked queries).
    @Test func streamCarrierIsTCPToTheResolver() throws {
        func tcp(to port: UInt16) -> [UInt8] {
            let ip: [UInt8] = [0x45, 0, 0, 40, 0, 1, 0x40, 0, 64, 6, 0, 0, 198, 18, 0, 2, 198, 18, 0, 1]
            let segment: [UInt8] = [0xc3, 0x50, UInt8(port >> 8), UInt8(port & 0xff), 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0]
            return SplitCheck.ethernet(ip + segment)
        }
        let dot = [try Endpoint(parsing: "198.18.0.1:853", defaultPort: 853)]
        #expect(UplinkPacket.decode(tcp(to: 853), atMs: 0, carriers: dot, carrierDomain: "t.lab.test").kind == .carrier)
        let udp = [try Endpoint(parsing: "198.18.0.1:53", defaultPort: 53)]
        #expect(UplinkPacket.decode(tcp(to: 53), atMs: 0, carriers: udp, carrierDomain: "t.lab.test").kind == .dns)
        #expect(UplinkPacket.decode(tcp(to: 443), atMs: 0, carriers: dot, carrierDomain: "t.lab.test").kind != .carrier)
    }
}
