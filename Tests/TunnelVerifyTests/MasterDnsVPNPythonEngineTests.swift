import Base
import DNSWire
import EngineModels
import Foundation
import Results
import Testing
@testable import TunnelVerify

/// MasterDnsVPN's Python edition as verify's engine: which edition a path names, the config it is
/// given (the keys that edition reads), the seed's handshake rule and the diagnostics on its own log
/// lines, recorded through `verify` against the edition's real server
/// (Fixtures/masterdnsvpn-python/README.md).
struct MasterDnsVPNPythonEngineTests {
    static func fixture(_ name: String, _ ext: String = "log") throws -> String {
        let url = try #require(Bundle.module.url(forResource: "Fixtures/masterdnsvpn-python/\(name)", withExtension: ext))
        return try String(contentsOf: url, encoding: .utf8)
    }

    static func profile(encryption: String = "maximum", fec: String = "balanced") throws -> Profile {
        try Profile.parse(Array("""
            {"version":1,"name":"Family MasterDnsVPN","protocol":"masterdns","domain":"m.lab.test",
             "resolvers":[{"type":"udp","address":"198.18.0.1:53"},{"type":"udp","address":"[2001:db8::53]:5353"}],
             "expectedExitIP":"198.18.2.1",
             "masterdns":{"encryptionLevel":"\(encryption)","fecLevel":"\(fec)","fecDirection":"download"}}
            """.utf8))
    }

    /// Every key client.py reads (`self.config.get("KEY"...)` in client.py at 012b7d3, all 68) and
    /// every key the Go edition's config has (`toml:` tags of internal/config/client.go at bc69a58).
    static let pythonKeys: Set<String> = [
        "ARQ_CONTROL_INITIAL_RTO", "ARQ_CONTROL_MAX_RETRIES", "ARQ_CONTROL_MAX_RTO", "ARQ_INITIAL_RTO", "ARQ_MAX_RTO", "ARQ_WINDOW_SIZE",
        "AUTO_DISABLE_CHECK_INTERVAL_SECONDS", "AUTO_DISABLE_TIMEOUT_MIN_OBSERVATIONS", "AUTO_DISABLE_TIMEOUT_SERVERS",
        "AUTO_DISABLE_TIMEOUT_WINDOW_SECONDS", "AUTO_SCALE_PROFILES", "BASE_ENCODE_DATA", "CONFIG_VERSION", "CPU_WORKER_THREADS",
        "DATA_ENCRYPTION_METHOD", "DNS_CACHE_ENABLED", "DNS_CACHE_FILE", "DNS_CACHE_FLUSH_INTERVAL_SECONDS", "DNS_CACHE_MAX_RECORDS",
        "DNS_CACHE_TTL_SECONDS", "DNS_QUERY_TIMEOUT", "DNS_TUNNEL_QUERY_RETRIES", "DNS_TUNNEL_QUERY_TIMEOUT", "DOMAINS",
        "DOWNLOAD_COMPRESSION_TYPE", "ENCRYPTION_KEY", "LISTEN_IP", "LISTEN_PORT", "LOCAL_DNS_ENABLED", "LOCAL_DNS_IP", "LOCAL_DNS_PORT",
        "LOCAL_DNS_WORKERS", "LOG_LEVEL", "MAX_CLOSED_STREAM_RECORDS", "MAX_CONNECTION_ATTEMPTS", "MAX_DOWNLOAD_MTU", "MAX_PACKETS_PER_BATCH",
        "MAX_UPLOAD_MTU", "MIN_DOWNLOAD_MTU", "MIN_UPLOAD_MTU", "MTU_ADDED_SERVER_LOG_FORMAT", "MTU_REMOVED_SERVER_LOG_FORMAT",
        "MTU_SERVERS_FILE_FORMAT", "MTU_SERVERS_FILE_NAME", "MTU_TEST_PARALLELISM", "MTU_TEST_RETRIES", "MTU_TEST_TIMEOUT",
        "MTU_USING_SECTION_SEPARATOR_TEXT", "NUM_DNS_WORKERS", "NUM_RX_WORKERS", "PACKET_DUPLICATION_COUNT", "PROTOCOL_TYPE",
        "RECHECK_BATCH_SIZE", "RECHECK_INACTIVE_INTERVAL_SECONDS", "RECHECK_INACTIVE_SERVERS_ENABLED", "RECHECK_SERVER_INTERVAL_SECONDS",
        "RESOLVER_BALANCING_STRATEGY", "RX_SEMAPHORE_LIMIT", "SAVE_MTU_SERVERS_TO_FILE", "SETUP_PACKET_DUPLICATION_COUNT",
        "SOCKET_BUFFER_SIZE", "SOCKS5_AUTH", "SOCKS5_PASS", "SOCKS5_USER", "SOCKS_HANDSHAKE_TIMEOUT", "STREAM_RESOLVER_FAILOVER_COOLDOWN",
        "STREAM_RESOLVER_FAILOVER_RESEND_THRESHOLD", "UPLOAD_COMPRESSION_TYPE",
    ]
    static let goKeysVerifyWrites: Set<String> = [
        "DOMAINS", "DATA_ENCRYPTION_METHOD", "ENCRYPTION_KEY", "PROTOCOL_TYPE", "LISTEN_IP", "LISTEN_PORT", "SOCKS5_AUTH",
        "LOCAL_DNS_ENABLED", "LOCAL_DNS_IP", "LOCAL_DNS_PORT", "LOCAL_DNS_CACHE_PERSIST_TO_FILE", "SAVE_MTU_SERVERS_TO_FILE", "LOG_LEVEL",
    ]

    /// The `KEY = value` lines of a config, without comments.
    static func settings(_ toml: String) -> [String: String] {
        var found: [String: String] = [:]
        for line in toml.split(separator: "\n") where !line.hasPrefix("#") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            let value = line[line.index(after: equals)...].split(separator: "#").first ?? ""
            found[line[..<equals].trimmingCharacters(in: .whitespaces)] = value.trimmingCharacters(in: .whitespaces)
        }
        return found
    }

    // MARK: - which edition, and its config

    @Test func theEnginePathNamesTheEdition() throws {
        #expect(MasterDnsVPNEdition.of(enginePath: nil) == .go)
        #expect(MasterDnsVPNEdition.of(enginePath: "/opt/mdv/masterdnsvpn-client") == .go)
        #expect(MasterDnsVPNEdition.of(enginePath: "/opt/mdv-py/client.py") == .python)
        // A directory is the Python edition's script directory (whether client.py is there is checked when located).
        #expect(MasterDnsVPNEdition.of(enginePath: FileManager.default.temporaryDirectory.path) == .python)
        #expect(MasterDnsVPNEdition.python.model == .masterDnsVPNPython && MasterDnsVPNEdition.go.model == .masterDnsVPNGo)
    }

    /// The config holds keys the Python edition reads, not the Go edition's names for them; the Go
    /// config stays as it was.
    @Test func theConfigHasTheKeysTheEditionReads() throws {
        let profile = try Self.profile()
        let python = try MasterDnsVPNConfig.normalize(profile, socks: nil, edition: .python)
        let written = Self.settings(python.toml(key: "00112233445566778899aabbccddeeff"))
        let unread = Set(written.keys).subtracting(Self.pythonKeys)
        #expect(unread.isEmpty, "keys the Python edition does not read: \(unread.sorted())")
        #expect(written["LOCAL_DNS_PORT"] == "53" && written["LOCAL_DNS_IP"] == "\"127.0.0.1\"" && written["LOCAL_DNS_ENABLED"] == "true")
        #expect(written["LISTEN_PORT"] == "18000" && written["PROTOCOL_TYPE"] == "\"SOCKS5\"" && written["SOCKS5_AUTH"] == "false")
        // Its DNS cache is only persisted (to dns_cache.json beside client.py) when this is on.
        #expect(written["DNS_CACHE_ENABLED"] == "false" && written["SAVE_MTU_SERVERS_TO_FILE"] == "false")
        #expect(written["ENCRYPTION_KEY"] == "\"00112233445566778899aabbccddeeff\"")
        #expect(python.resolverFile == "198.18.0.1:53\n[2001:db8::53]:5353\n")
        let go = Self.settings(try MasterDnsVPNConfig.normalize(profile, socks: nil).toml(key: "k"))
        #expect(Set(go.keys) == Self.goKeysVerifyWrites)
    }

    /// The seed's "maximum" is the strongest method the edition can run; a method the Python
    /// edition cannot run is refused with its field, never written.
    @Test func maximumIsTheStrongestMethodTheEditionRuns() throws {
        #expect(try MasterDnsVPNConfig.normalize(Self.profile(), socks: nil, edition: .go).encryption == .aes256GCM)
        let python = try MasterDnsVPNConfig.normalize(Self.profile(), socks: nil, edition: .python)
        #expect(python.encryption == .chacha20)
        #expect(python.toml(key: nil).contains("DATA_ENCRYPTION_METHOD = 2  # masterdns.encryptionLevel \"maximum\": the strongest method the Python edition can run"))
        for level in ["aes-128-gcm", "aes-192-gcm", "aes-256-gcm", "5"] {
            #expect { try MasterDnsVPNConfig.normalize(Self.profile(encryption: level), socks: nil, edition: .python) } throws: { error in
                guard let error = error as? ProfileError else { return false }
                return error.field == "masterdns.encryptionLevel" && error.reason.contains("Python edition cannot run")
                    && error.reason.contains("64-character label") && !error.description.contains("\n")
            }
            #expect(try MasterDnsVPNConfig.normalize(Self.profile(encryption: level), socks: nil, edition: .go).encryption.rawValue >= 3)
        }
        for (level, method) in [("chacha20", EncryptionMethod.chacha20), ("xor", .xor), ("none", EncryptionMethod.none), ("minimum", .xor)] {
            #expect(try MasterDnsVPNConfig.normalize(Self.profile(encryption: level), socks: nil, edition: .python).encryption == method)
        }
        // The rule is the engine model's: the probe header's label must fit 63 characters.
        #expect(EncryptionMethod.allCases.filter { MasterDnsVPNEdition.python.runs($0) } == [.none, .xor, .chacha20])
    }

    /// The Python edition takes no arguments: each `--engine-arg` is a config line, replacing the
    /// key verify writes by default; the keys the profile and flags set cannot be replaced.
    @Test func engineArgumentsAreConfigLines() throws {
        let config = try MasterDnsVPNConfig.normalize(Self.profile(), socks: nil, edition: .python,
                                                      arguments: ["LOG_LEVEL=\"DEBUG\"", "MTU_TEST_TIMEOUT = 2.0", "LOG_LEVEL=\"WARNING\""])
        let text = config.toml(key: nil)
        let written = Self.settings(text)
        #expect(written["LOG_LEVEL"] == "\"WARNING\"" && written["MTU_TEST_TIMEOUT"] == "2.0")
        #expect(text.components(separatedBy: "LOG_LEVEL =").count == 2, "one LOG_LEVEL line (TOML refuses a key twice)")
        for bad in ["-v", "log_level=\"DEBUG\"", "LOG_LEVEL=", "LISTEN_PORT=1080", "ENCRYPTION_KEY=\"x\""] {
            #expect { try MasterDnsVPNConfig.normalize(Self.profile(), socks: nil, edition: .python, arguments: [bad]) } throws: {
                ($0 as? ProfileError)?.field == "--engine-arg" && ($0 as? ProfileError)?.reason.contains(bad) == true
            }
        }
        // The Go edition's arguments stay arguments.
        #expect(try MasterDnsVPNConfig.normalize(Self.profile(), socks: nil, edition: .go, arguments: ["-v"]).settings.isEmpty)
    }

    // MARK: - the handshake rule on the recordings

    @Test(arguments: [("fec-none", "1"), ("fec-conservative", "2"), ("fec-balanced", "3"), ("fec-aggressive", "4")])
    func recordedGoodHandshakePasses(name: String, session: String) throws {
        let log = MasterDnsVPNLog(try Self.fixture(name), edition: .python)
        guard case .done(let evidence, let line) = log.handshake else {
            Issue.record("no handshake in \(name)")
            return
        }
        #expect(evidence == "session id \(session), 1 accepted resolver (198.18.0.1:53)")
        #expect(line.hasPrefix("Validated Session ID: \(session),"))
        #expect(log.uploadMTU == 120 && log.downloadMTU == 1200)
        #expect(log.validTotal?.valid == 1 && log.validTotal?.of == 1)
        #expect(log.phase == "running" && log.socksListening == "18000")
    }

    /// The edition's own words decide: the Go edition's lines are not in a Python log.
    @Test func theRuleReadsTheEditionsOwnLines() throws {
        let text = try Self.fixture("fec-balanced")
        #expect(MasterDnsVPNLog(text, edition: .go).handshake == .pending)
        #expect(MasterDnsVPNLog(text, edition: .go).sessionID == nil)
        // Both halves: no acceptance, or no session, is no handshake.
        let lines = TerminalText.plain(text).split(separator: "\n", omittingEmptySubsequences: false)
        let withoutAcceptance = lines.filter { !$0.contains("Accepted (") }.joined(separator: "\n")
        #expect(MasterDnsVPNLog(withoutAcceptance, edition: .python).handshake == .pending)
        let withoutSession = lines.filter { !$0.contains("Session ID") }.joined(separator: "\n")
        #expect(MasterDnsVPNLog(withoutSession, edition: .python).handshake == .pending)
        #expect(MasterDnsVPNLog(withoutSession, edition: .python).missing.reason == "no session: a resolver was accepted but no session id arrived")
        let cut = lines.prefix { !$0.contains("Initializing session") }.joined(separator: "\n")
        #expect(MasterDnsVPNLog(cut, edition: .python).handshake == .pending)
        #expect(MasterDnsVPNLog(cut, edition: .python).accepted == ["198.18.0.1:53"])
    }

    @Test(arguments: ["wrong-key", "wrong-key-debug", "resolver-drop-debug", "aes-256-gcm-debug"])
    func recordedNoResolverIsNamed(name: String) throws {
        let log = MasterDnsVPNLog(try Self.fixture(name), edition: .python)
        #expect(log.handshake == .pending)
        let missing = log.missing
        #expect(missing.reason.hasPrefix("no resolver accepted: every MTU probe failed (rejected: 198.18.0.1:53 UPLOAD_MTU)"), "\(missing.reason)")
        #expect(missing.line == "No valid connections found after MTU testing!")
        #expect(log.phase == "mtu-test")
    }

    /// The AES-GCM recording shows why verify refuses the method for this edition: the client
    /// builds no query at all.
    @Test func recordedAESGCMBuildsNoQuery() throws {
        let text = TerminalText.plain(try Self.fixture("aes-256-gcm-debug"))
        #expect(text.components(separatedBy: "[DEBUG] Label too long").count > 4)
        #expect(!MasterDnsVPNEdition.python.runs(.aes256GCM) && MasterDnsVPNEdition.python.runs(.chacha20))
    }

    @Test func recordedFullServerIsNamed() throws {
        let log = MasterDnsVPNLog(try Self.fixture("server-full"), edition: .python)
        #expect(log.handshake == .pending)
        #expect(log.accepted == ["198.18.0.1:53"] && log.phase == "session-init")
        #expect(log.missing.reason.hasPrefix("no session: a resolver was accepted but the server did not answer session init"))
        #expect(log.missing.reason.contains("MAX_SESSIONS"))
        #expect(log.missing.line == "Session init failed via 198.18.0.1 for m.lab.test. Retrying overall process...")
        #expect(log.sessionResolver == "198.18.0.1")
    }

    @Test func recordedExitOnABadConfigSaysWhy() throws {
        let log = MasterDnsVPNLog(try Self.fixture("exit-on-bad-config"), edition: .python)
        // The client prints the parse error without a level tag, then its misleading consequence.
        #expect(log.startupErrorLine?.hasPrefix("[MasterDnsVPN] Failed to parse config file '") == true)
        #expect(log.startupErrorLine?.hasSuffix("client_config.toml': Invalid value (at line 14, column 13)") == true)
        #expect(log.missing.reason == "the client did not start")
    }

    /// Total: any text gives a value.
    @Test func anyTextParses() {
        for text in ["", "\u{1B}[", "\u{1B}[31", "Validated Session ID: ", "Session Established! Session ID: x", "Session init failed via ",
                     "[SUCCESS] [SUCCESS] Validated Session ID: 9", String(repeating: "\u{1B}[1m✅ Accepted (1/1): a via | ", count: 50)] {
            let log = MasterDnsVPNLog(text, edition: .python)
            #expect(log.handshake == .pending || log.sessionID != nil)
            _ = log.missing
        }
    }

    // MARK: - diagnostics

    @Test func diagnosticsOfARecordedRun() throws {
        let fec = FECPreset.normalized("balanced")
        let d = EngineDiagnostics.masterDnsVPN(log: try Self.fixture("fec-balanced"), edition: .python, carrier: (up: 59, down: 0), fec: fec)
        #expect(d.enginePhase == "running" && d.sessionID == "3" && d.selectedResolver == "198.18.0.1:53")
        #expect(d.acceptedResolvers == 1 && d.rejectedResolvers == 0 && d.uploadMTU == 120 && d.downloadMTU == 1200)
        #expect(d.packetsUp == 59 && d.fecRequested == fec)
        #expect(d.sources["sessionID"] == "the client's log (Python edition)")
        for field in ["arqResends", "arqNacks", "fecNegotiated", "fecRecoveredPackets"] {
            #expect(d.unavailable[field]?.contains("Python edition") == true, "\(field)")
        }
        let failed = EngineDiagnostics.masterDnsVPN(log: try Self.fixture("server-full"), edition: .python, carrier: nil, fec: nil)
        #expect(failed.sessionID == nil && failed.enginePhase == "session-init" && failed.selectedResolver == "198.18.0.1")
    }

    // MARK: - what the capture and the interpreter check read

    /// The client searches its upload limit with names past 255 octets (a 275-octet name, recorded
    /// in the run of fec-none): still its own query to its resolver, never a leak.
    @Test func anOverlongProbeIsTheCarrier() throws {
        let hex = try Self.fixture("overlong-upload-probe", "hex").trimmingCharacters(in: .whitespacesAndNewlines)
        var frame: [UInt8] = []
        var index = hex.startIndex
        while let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex), next > index {
            frame.append(try #require(UInt8(hex[index..<next], radix: 16)))
            index = next
        }
        #expect(frame.count == 344)
        #expect((try? DNSMessage(parsing: Array(frame[42...]))) == nil, "no DNS name: past 255 octets")
        let name = try #require(DNSMessage.firstQuestionName(ignoringLengthLimit: Array(frame[42...])))
        #expect(name.hasSuffix(".m.lab.test") && name.utf8.count + 2 == 275)
        let carrier = [Endpoint(address: IPAddress("198.18.0.1")!, port: 53)]
        let packet = UplinkPacket.decode(frame, atMs: 0, carriers: carrier, carrierDomain: "m.lab.test")
        #expect(packet.kind == .carrier)
        #expect(UplinkPacket.decode(frame, atMs: 0, carriers: carrier, carrierDomain: "other.test").kind == .dns)
    }

    @Test func theInterpretersAnswerIsRead() {
        #expect(MasterDnsVPNPythonScript.readCheck("3.11\n").map { $0.version == (3, 11) && $0.missing.isEmpty } == true)
        #expect(MasterDnsVPNPythonScript.readCheck("3.9 loguru lz4\n")?.missing == ["loguru", "lz4"])
        #expect(MasterDnsVPNPythonScript.readCheck("") == nil)
        #expect(MasterDnsVPNPythonScript.readCheck("Traceback (most recent call last):") == nil)
        #expect(MasterDnsVPNPythonScript.checkProgram.contains("(\"cryptography\", \"cryptography\")"))
    }

    @Test func terminalEscapesAreRemoved() throws {
        #expect(TerminalText.plain("\u{1B}[36m[MasterDnsVPN Client]\u{1B}[0m \u{1B}[1m[INFO]\u{1B}[0m ok") == "[MasterDnsVPN Client] [INFO] ok")
        #expect(TerminalText.plain("\u{1B}[38;2;255;69;109mred\u{1B}[0m") == "red")
        #expect(TerminalText.plain("a\u{1B}Mb") == "ab")
        #expect(TerminalText.plain("end\u{1B}[3") == "end" && TerminalText.plain("\u{1B}") == "")
        #expect(TerminalText.plain("plain ✅ text") == "plain ✅ text")
        #expect(TerminalText.plain("\u{1B}\u{1B}[31mx") == "x" && TerminalText.plain("a\u{1B}[3\u{1B}[0mb") == "ab")
        let recorded = try Self.fixture("fec-balanced")
        #expect(recorded.contains("\u{1B}[") && !TerminalText.plain(recorded).contains("\u{1B}"))
        // Seeded: whatever the text, no escape is left and nothing but escape sequences goes.
        var rng = SplitMix64(seed: 0x7E57_A251)
        let alphabet: [Unicode.Scalar] = ["\u{1B}", "[", "3", "1", ";", "m", "M", "a", " ", "✅", "\u{7F}", "\n"]
        for _ in 0..<5_000 {
            var text = String.UnicodeScalarView()
            for _ in 0..<Int(rng.next() % 24) { text.append(alphabet[Int(rng.next() % UInt64(alphabet.count))]) }
            let plain = TerminalText.plain(String(text))
            #expect(!plain.unicodeScalars.contains("\u{1B}"), "\(String(text).debugDescription)")
            #expect(plain.unicodeScalars.filter { $0 == "✅" || $0 == "\n" }.count == text.filter { $0 == "✅" || $0 == "\n" }.count,
                    "\(String(text).debugDescription)")
        }
    }
}
