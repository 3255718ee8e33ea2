import Base
import OSLayer
import Foundation
import Reports
import Testing
import TestSupport
@testable import TunnelVerify

/// `verify --engine masterdnsvpn` with the Python edition through the whole lifecycle (the private
/// copy of the script directory, its config beside the copy's client.py, the interpreter check,
/// sandbox, TUN, routes, the handshake rule on the edition's own lines, the bridge, verdict, cleanup),
/// and `verify --cycles` / `resilience` through the packet-flow bridge. The engine is a stand-in
/// for the interpreter that REPLAYS a client log recorded against the edition's real server
/// (Fixtures/masterdnsvpn-python/README.md): it sends nothing. For the cycles and the scenario it
/// then runs a small SOCKS5 server on the client's listener that answers every CONNECT as the lab's
/// whoami would, so the first data can only arrive if the bridge carried a plain TCP connection to it.
let masterDnsVPNPythonReplayGate = LabGate(tools: [("ip", "iproute2"), ("nft", "nftables"), ("redsocks", "redsocks"), ("python3", "python3")],
                                           binary: true)

@Suite(.serialized, .enabled(if: masterDnsVPNPythonReplayGate.runs, "needs root, ip, nft, redsocks, python3 and the binary"))
struct MasterDnsVPNPythonReplayLabTests {
    static let gate = masterDnsVPNPythonReplayGate

    static let profile = """
        {"version":1,"name":"Family MasterDnsVPN","protocol":"masterdns","domain":"m.lab.test",
         "resolvers":[{"type":"udp","address":"198.18.0.1:53"}],"expectedExitIP":"198.18.2.1",
         "masterdns":{"encryptionLevel":"maximum","fecLevel":"balanced","fecDirection":"download"}}
        """
    /// A documentation address (RFC 5737): routed into the TUN, so only the bridge can carry it.
    static let whoami = "http://203.0.113.80/"

    final class Scratch {
        let directory: String
        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("tp-mdvpy-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        deinit { try? FileManager.default.removeItem(atPath: directory) }

        @discardableResult
        func write(_ name: String, _ text: String, mode: Int = 0o600) throws -> String {
            let path = directory + "/" + name
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
            return path
        }

        func read(_ name: String) -> String? { try? String(contentsOfFile: directory + "/" + name, encoding: .utf8) }
    }

    /// The user's script directory as the edition ships it, plus what must never be copied or
    /// read: its own config and cache, a virtualenv, bytecode.
    func userDirectory(_ scratch: Scratch) throws -> String {
        try scratch.write("mdv-py/client.py", "# stands for the Python edition's client.py\n")
        try scratch.write("mdv-py/build_version.py", "BUILD_VERSION = \"dev\"\n")
        try scratch.write("mdv-py/dns_utils/__init__.py", "")
        try scratch.write("mdv-py/dns_utils/DnsPacketParser.py", "# module\n")
        try scratch.write("mdv-py/dns_utils/__pycache__/DnsPacketParser.cpython-311.pyc", "bytecode")
        try scratch.write("mdv-py/client_config.toml", "ENCRYPTION_KEY = \"the user's own\"\n")
        try scratch.write("mdv-py/dns_cache.json", "{}")
        try scratch.write("mdv-py/venv/bin/activate", "# a virtualenv\n")
        return scratch.directory + "/mdv-py"
    }

    /// The stand-in interpreter: answers verify's module check; run with the copy's client.py it
    /// keeps what verify gave it, prints the recorded log line by line and then ends as `tail` says.
    func interpreter(_ scratch: Scratch, fixture: String, tail: String = "exec sleep 60") throws -> String {
        let url = try #require(Bundle.module.url(forResource: "Fixtures/masterdnsvpn-python/\(fixture)", withExtension: "log"))
        let keep = scratch.directory
        return try scratch.write("python-\(fixture).sh", """
            #!/bin/sh
            # A stand-in for the interpreter replaying a recorded MasterDnsVPN Python client log, not an engine.
            if [ "$1" = "-c" ]; then echo 3.11; exit 0; fi
            dir=$(dirname "$1")
            echo "$1" >> \(keep)/seen-scripts.txt
            cp "$dir/client_config.toml" \(keep)/seen-config.toml
            cp "$dir/client_resolvers.txt" \(keep)/seen-resolvers.txt
            (cd "$dir" && ls -A . dns_utils) > \(keep)/seen-listing.txt
            while IFS= read -r line; do printf '%s\\n' "$line"; sleep 0.002; done < '\(url.path)'
            \(tail)

            """, mode: 0o700)
    }

    /// A SOCKS5 server on the client's listener (127.0.0.1:18000) that answers every CONNECT as the
    /// lab's whoami does (the exit address; 128 KiB for `/bulk`) and logs each target: the
    /// stand-in's "tunnel".
    func socksServer(_ scratch: Scratch) throws -> String {
        try scratch.write("socks.py", """
            import socket, sys, threading
            log = open(sys.argv[1], "a")
            def exact(c, n):
                data = b""
                while len(data) < n:
                    part = c.recv(n - len(data))
                    if not part: raise EOFError
                    data += part
                return data
            def serve(c):
                try:
                    c.settimeout(5)
                    greeting = exact(c, 2); exact(c, greeting[1]); c.sendall(b"\\x05\\x00")
                    head = exact(c, 4)
                    if head[3] == 1: host = socket.inet_ntoa(exact(c, 4))
                    elif head[3] == 3: host = exact(c, exact(c, 1)[0]).decode()
                    else: host = socket.inet_ntop(socket.AF_INET6, exact(c, 16))
                    port = int.from_bytes(exact(c, 2), "big")
                    log.write("%s:%d\\n" % (host, port)); log.flush()
                    c.sendall(b"\\x05\\x00\\x00\\x01\\x7f\\x00\\x00\\x01\\x00\\x00")
                    request = c.recv(4096)
                    body = b"x" * 131072 if request.startswith(b"GET /bulk") else b"198.18.2.1\\n"
                    c.sendall(b"HTTP/1.0 200 OK\\r\\nContent-Type: text/plain\\r\\n\\r\\n" + body)
                except Exception:
                    pass
                finally:
                    c.close()
            server = socket.socket()
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            server.bind(("127.0.0.1", 18000))
            server.listen(64)
            while True:
                client, _ = server.accept()
                threading.Thread(target=serve, args=(client,), daemon=True).start()

            """)
    }

    func run(_ command: String, _ arguments: [String], scratch: Scratch) async throws -> (status: Int32, error: String, directory: String) {
        let out = scratch.directory + "/out-\(UUID().uuidString.prefix(8))"
        let outcome = try await Host.run([TestEnvironment.binary, command, "--out", out, "--quiet", "--seed", "18"] + arguments)
        return (outcome.status, outcome.error, out)
    }

    func verify(_ arguments: [String], scratch: Scratch) async throws -> (status: Int32, error: String, report: VerifyReport?) {
        let run = try await run("verify", arguments, scratch: scratch)
        let report = FileManager.default.contents(atPath: run.directory + "/verify.json").flatMap { try? JSONDecoder().decode(VerifyReport.self, from: $0) }
        if let report {
            let namespaces = (try? await Host.run(["ip", "netns", "list"]).output) ?? ""
            #expect(!namespaces.contains(report.result.sandbox), "sandbox left behind: \(report.result.sandbox)")
        }
        return (run.status, run.error, report)
    }

    func resilience(_ command: String, _ arguments: [String], scratch: Scratch) async throws -> (status: Int32, error: String, report: ResilienceReport?) {
        let run = try await run(command, arguments, scratch: scratch)
        let report = FileManager.default.contents(atPath: run.directory + "/resilience.json")
            .flatMap { try? JSONDecoder().decode(ResilienceReport.self, from: $0) }
        if let report {
            let namespaces = (try? await Host.run(["ip", "netns", "list"]).output) ?? ""
            #expect(!namespaces.contains(report.result.sandbox), "sandbox left behind: \(report.result.sandbox)")
        }
        return (run.status, run.error, report)
    }

    @Test(.timeLimit(.minutes(1))) func recordedGoodHandshakePasses() async throws {
        try Self.gate.check()
        let scratch = try Scratch()
        let profile = try scratch.write("p.json", Self.profile)
        let key = try scratch.write("key", "00112233445566778899aabbccddeeff\n")
        let user = try userDirectory(scratch)
        let python = try interpreter(scratch, fixture: "fec-balanced")
        let run = try await verify(["--profile", profile, "--engine", "masterdnsvpn", "--engine-path", user, "--engine-python", python,
                                    "--password-file", key, "--checks", "ipv6Leak", "--handshake-deadline", "10"], scratch: scratch)
        let report = try #require(run.report, "\(run.error)")
        #expect(run.status == 0, "\(run.error)")
        #expect(report.result.verdict == .pass, "\(report.result.reason ?? "")")
        #expect(report.result.handshake.evidence == "session id 3, 1 accepted resolver (198.18.0.1:53)")
        let bridge = try #require(report.result.phases.first { $0.name == "bridge" })
        #expect(bridge.ok && bridge.detail?.contains("SOCKS5 127.0.0.1:18000") == true)
        let diagnostics = try #require(report.result.diagnostics.engine)
        #expect(diagnostics.sessionID == "3" && diagnostics.acceptedResolvers == 1 && diagnostics.uploadMTU == 120 && diagnostics.downloadMTU == 1200)
        #expect(diagnostics.sources["sessionID"] == "the client's log (Python edition)")
        // The interpreter ran the private copy's client.py, inside the run's sandbox directory, gone now.
        let script = try #require(scratch.read("seen-scripts.txt")?.split(separator: "\n").first.map(String.init))
        #expect(script.hasPrefix(Sandbox.defaultStateRoot + "/") && script.hasSuffix("/masterdnsvpn-python/client.py"), "\(script)")
        #expect(!FileManager.default.fileExists(atPath: script), "the private copy is removed with the sandbox")
        #expect(report.result.engineCommand.contains(python) && report.result.engineCommand.contains(script))
        // The copy: the modules and packages, verify's two files; never the user's config, cache, virtualenv or bytecode.
        let listing = Set(try #require(scratch.read("seen-listing.txt")).split(separator: "\n").map(String.init))
        #expect(listing.isSuperset(of: ["build_version.py", "client.py", "client_config.toml", "client_resolvers.txt", "dns_utils",
                                        "__init__.py", "DnsPacketParser.py"]), "\(listing)")
        #expect(listing.isDisjoint(with: ["venv", "dns_cache.json", "__pycache__"]), "\(listing)")
        let config = try #require(scratch.read("seen-config.toml"))
        #expect(config.contains("ENCRYPTION_KEY = \"00112233445566778899aabbccddeeff\"") && config.contains("DATA_ENCRYPTION_METHOD = 2 "))
        #expect(config.contains("LOCAL_DNS_PORT = 53") && config.contains("DNS_CACHE_ENABLED = false"))
        #expect(scratch.read("seen-resolvers.txt") == "198.18.0.1:53\n")
        #expect(scratch.read("mdv-py/client_config.toml") == "ENCRYPTION_KEY = \"the user's own\"\n", "the user's directory is never written")
    }

    @Test(arguments: [
        ("wrong-key", "handshake timeout: no resolver accepted", "No valid connections found after MTU testing"),
        ("resolver-drop-debug", "handshake timeout: no resolver accepted", "No valid connections found after MTU testing"),
        ("server-full", "handshake timeout: no session: a resolver was accepted but the server did not answer session init",
         "Session init failed via 198.18.0.1"),
    ])
    func recordedFailureIsNamedInTheClientsWords(fixture: String, reason: String, words: String) async throws {
        try Self.gate.check()
        let scratch = try Scratch()
        let profile = try scratch.write("p.json", Self.profile)
        let key = try scratch.write("key", "00112233445566778899aabbccddeeff\n")
        let run = try await verify(["--profile", profile, "--engine-path", try userDirectory(scratch) + "/client.py",
                                    "--engine-python", try interpreter(scratch, fixture: fixture), "--password-file", key,
                                    "--checks", "ipv6Leak", "--handshake-deadline", "3"], scratch: scratch)
        let report = try #require(run.report, "\(run.error)")
        #expect(run.status == 1)
        let failure = try #require(report.result.failure)
        #expect(failure.phase == "handshake")
        #expect(failure.reason.hasPrefix(reason), "\(failure.reason)")
        // The client's own words, without its terminal colours.
        #expect(failure.engineWords.first?.contains(words) == true, "\(failure.engineWords)")
        #expect(failure.engineWords.allSatisfy { !$0.contains("\u{1B}") }, "\(failure.engineWords)")
        #expect(report.result.diagnostics.engine?.sessionID == nil)
    }

    @Test func recordedExitOnABadConfigSaysWhy() async throws {
        try Self.gate.check()
        let scratch = try Scratch()
        let profile = try scratch.write("p.json", Self.profile)
        let key = try scratch.write("key", "k\n")
        let run = try await verify(["--profile", profile, "--engine-path", try userDirectory(scratch), "--engine-python",
                                    try interpreter(scratch, fixture: "exit-on-bad-config", tail: "exit 1"), "--password-file", key,
                                    "--checks", "ipv6Leak", "--engine-arg", "LOG_LEVEL=DEBUG"], scratch: scratch)
        let failure = try #require(run.report?.result.failure, "\(run.error)")
        #expect(["engine", "handshake"].contains(failure.phase))
        #expect(failure.reason.contains("with status 1: [MasterDnsVPN] Failed to parse config file '"), "\(failure.reason)")
        #expect(failure.exitCode == 1)
        // The line the recording's client could not parse is the one verify wrote for the argument.
        #expect(scratch.read("seen-config.toml")?.split(separator: "\n").dropFirst(13).first == "LOG_LEVEL = DEBUG  # --engine-arg")
    }

    // MARK: - the packet-flow bridge in --cycles and resilience

    /// Each cycle sets the bridge up after the handshake and takes it down with the engine; the
    /// first data is a plain connection to an address routed into the TUN, which only the bridge
    /// carries to the client's SOCKS5 listener.
    @Test(.timeLimit(.minutes(2))) func cyclesGoThroughTheBridge() async throws {
        try Self.gate.check()
        let scratch = try Scratch()
        let profile = try scratch.write("p.json", Self.profile)
        let key = try scratch.write("key", "00112233445566778899aabbccddeeff\n")
        let python3 = try #require(Executables.locate("python3"))
        let socks = try socksServer(scratch)
        let python = try interpreter(scratch, fixture: "fec-none", tail: "exec \(python3) \(socks) \(scratch.directory)/connects.txt")
        let run = try await resilience("verify", ["--profile", profile, "--engine-path", try userDirectory(scratch), "--engine-python", python,
                                                  "--password-file", key, "--whoami-url", Self.whoami, "--cycles", "2",
                                                  "--handshake-deadline", "10"], scratch: scratch)
        let report = try #require(run.report, "\(run.error)")
        #expect(run.status == 0, "\(run.error)")
        #expect(report.result.cycles.count == 2 && report.result.cycles.allSatisfy(\.ok), "\(report.result.cycles)")
        for cycle in report.result.cycles {
            let bridge = try #require(cycle.bridge, "cycle \(cycle.index) has no bridge")
            #expect(bridge.ok && bridge.name == "bridge" && bridge.detail?.contains("redsocks 127.0.0.1:\(PacketBridge.port) -> SOCKS5 127.0.0.1:18000") == true)
            #expect(bridge.startedMs >= (cycle.handshakeMs ?? 0) && bridge.startedMs <= (cycle.firstDataMs ?? 0), "set up between handshake and first data")
        }
        #expect(report.result.leftovers?.clean == true, "\(String(describing: report.result.leftovers))")
        // Each cycle's first data came to the listener as a CONNECT to the whoami, from redsocks.
        let connects = (scratch.read("connects.txt") ?? "").split(separator: "\n")
        #expect(connects.count >= 2 && connects.allSatisfy { $0 == "203.0.113.80:80" }, "\(connects)")
        #expect(report.result.socks == "127.0.0.1:18000")
    }

    /// The probe flow of a scenario goes through the bridge, and an engine restart brings a new one.
    @Test(.timeLimit(.minutes(2))) func aScenariosProbesGoThroughTheBridge() async throws {
        try Self.gate.check()
        let scratch = try Scratch()
        let profile = try scratch.write("p.json", Self.profile)
        let key = try scratch.write("key", "00112233445566778899aabbccddeeff\n")
        let python3 = try #require(Executables.locate("python3"))
        let socks = try socksServer(scratch)
        let python = try interpreter(scratch, fixture: "fec-none", tail: "exec \(python3) \(socks) \(scratch.directory)/connects.txt")
        let run = try await resilience("resilience", ["--profile", profile, "--engine-path", try userDirectory(scratch), "--engine-python", python,
                                                      "--password-file", key, "--whoami-url", Self.whoami, "--scenarios", "engine-restart",
                                                      "--recovery-bound", "10", "--handshake-deadline", "10"], scratch: scratch)
        let report = try #require(run.report, "\(run.error)")
        let scenario = try #require(report.result.scenarios.first, "\(run.error)")
        #expect(scenario.engineRestarted == "tool" && scenario.recoverySeconds != nil, "\(scenario.notes)")
        #expect(scenario.leaked == false, "\(scenario.leakEvidence)")
        let bridge = try #require(scenario.bridge)
        #expect(bridge.ok && bridge.detail?.contains("redsocks") == true)
        // The flow's answered probes all came through the listener.
        let answered = scenario.probes.filter(\.ok).count
        let connects = (scratch.read("connects.txt") ?? "").split(separator: "\n")
        #expect(answered > 0 && connects.count >= answered && connects.allSatisfy { $0 == "203.0.113.80:80" }, "\(answered) answered, \(connects.count) CONNECTs")
        #expect(report.result.verdict == .pass, "\(report.result.notes)")
    }

    /// `scan --e2e`'s run for one pair (in process, `EndToEndConfiguration`): the first data and
    /// the bulk download both go through the bridge, and a bridged engine's TUN, which nothing
    /// reads, is not required to count the bulk's packets.
    @Test(.timeLimit(.minutes(1))) func endToEndBulkGoesThroughTheBridge() async throws {
        try Self.gate.check()
        let scratch = try Scratch()
        let key = try scratch.write("key", "00112233445566778899aabbccddeeff\n")
        let python3 = try #require(Executables.locate("python3"))
        var overrides = EngineOverrides()
        overrides.enginePath = try userDirectory(scratch)
        overrides.python = try interpreter(scratch, fixture: "fec-none",
                                           tail: "exec \(python3) \(try socksServer(scratch)) \(scratch.directory)/connects.txt")
        overrides.passwordFile = key
        overrides.handshakeDeadline = .seconds(10)
        let bulk = BulkTransfer(url: try #require(WhoamiURL("http://203.0.113.80/bulk")), bytes: 65_536, timeout: .seconds(20))
        let e2e = EndToEndConfiguration(profile: try Profile.parse(Array(Self.profile.utf8)), engine: .masterdnsvpn, overrides: overrides,
                                        whoami: try #require(WhoamiURL(Self.whoami)), bulk: bulk, seed: 18)
        try await e2e.preflight()
        let result = try await e2e.run(resolver: try Endpoint(parsing: "198.18.0.1:53", defaultPort: 53), domain: "m.lab.test", index: 0)
        #expect(result.verdict == .pass, "\(result.reason ?? "")")
        #expect(result.phases.map(\.name).contains("bridge") && result.phases.last?.name == "checks")
        #expect(result.transfer?.bulkBytes == 65_536 && (result.transfer?.goodputBytesPerSecond ?? 0) > 0, "\(String(describing: result.transfer))")
        let connects = (scratch.read("connects.txt") ?? "").split(separator: "\n")
        #expect(connects.count >= 2 && connects.allSatisfy { $0 == "203.0.113.80:80" }, "\(connects)")
    }

    // MARK: - errors, one line each

    @Test func whatIsNotThePythonEditionIsOneLine() async throws {
        try Self.gate.check()
        let scratch = try Scratch()
        let profile = try scratch.write("p.json", Self.profile)
        let key = try scratch.write("key", "k\n")
        let user = try userDirectory(scratch)
        func verify(_ arguments: [String]) async throws -> ProgramRun.Outcome {
            try await Host.run([TestEnvironment.binary, "verify", "--profile", profile, "--password-file", key] + arguments)
        }
        // A client.py without the edition's package beside it.
        let lone = try scratch.write("lone/client.py", "#\n")
        let notEdition = try await verify(["--engine-path", lone])
        #expect(notEdition.status == 69 && notEdition.error.contains("no dns_utils/ beside client.py"), "\(notEdition.error)")
        let server = try scratch.write("mdv-py/server.py", "#\n")
        let notClient = try await verify(["--engine-path", server])
        #expect(notClient.status == 69 && notClient.error.contains("client is client.py"), "\(notClient.error)")
        let noInterpreter = try await verify(["--engine-path", user, "--engine-python", scratch.directory + "/no-such-python"])
        #expect(noInterpreter.status == 69 && noInterpreter.error.contains("--engine-python") && noInterpreter.error.contains("no executable file"),
                "\(noInterpreter.error)")
        // An interpreter for the Go edition, a Go argument, an AES-GCM profile: usage and input errors.
        let goPython = try await verify(["--engine-python", "/usr/bin/python3"])
        #expect(goPython.status == 64 && goPython.error.contains("Python edition only"), "\(goPython.error)")
        let argument = try await verify(["--engine-path", user, "--engine-arg=-log-level"])
        #expect(argument.status == 64 && argument.error.contains("KEY=VALUE"), "\(argument.error)")
        let aes = try scratch.write("aes.json", Self.profile.replacingOccurrences(of: "\"maximum\"", with: "\"aes-256-gcm\""))
        let refused = try await Host.run([TestEnvironment.binary, "verify", "--profile", aes, "--password-file", key, "--engine-path", user])
        #expect(refused.status == 66 && refused.error.contains("masterdns.encryptionLevel") && refused.error.contains("Python edition cannot run"),
                "\(refused.error)")
        for outcome in [notEdition, notClient, noInterpreter, goPython, argument, refused] {
            #expect(outcome.error.split(separator: "\n").count == 1, "\(outcome.error)")
        }
    }

    /// A real interpreter without the edition's modules (site-packages off): one line naming the
    /// pip packages, exit 69, nothing built.
    @Test func missingModulesAreOneLineAndExit69() async throws {
        try Self.gate.check()
        let scratch = try Scratch()
        let profile = try scratch.write("p.json", Self.profile)
        let key = try scratch.write("key", "k\n")
        let python3 = try #require(Executables.locate("python3"))
        let bare = try scratch.write("bare-python.sh", "#!/bin/sh\nexec \(python3) -S \"$@\"\n", mode: 0o700)
        let outcome = try await Host.run([TestEnvironment.binary, "verify", "--profile", profile, "--password-file", key,
                                          "--engine-path", try userDirectory(scratch), "--engine-python", bare, "--out", scratch.directory + "/out"])
        #expect(outcome.status == 69, "\(outcome.error)")
        #expect(outcome.error.split(separator: "\n").count == 1, "\(outcome.error)")
        #expect(outcome.error.contains("lacks the MasterDnsVPN Python edition's modules loguru, cryptography, zstandard, lz4")
                && outcome.error.contains("-m pip install loguru cryptography zstandard lz4"), "\(outcome.error)")
        #expect(!FileManager.default.fileExists(atPath: scratch.directory + "/out"), "nothing is made before the check")
    }
}
