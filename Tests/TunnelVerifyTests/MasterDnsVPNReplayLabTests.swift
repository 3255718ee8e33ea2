import Base
import Foundation
import Reports
import Testing
import TestSupport
@testable import TunnelVerify

/// `verify --engine masterdnsvpn` through its whole lifecycle (sandbox, config, engine, TUN,
/// routes, handshake rule, verdict, cleanup) with a stand-in engine that REPLAYS a client log
/// recorded against a real MasterDnsVPN server (Fixtures/masterdnsvpn/README.md). The stand-in is
/// not an engine: it prints the recording and sends nothing. CI cannot install MasterDnsVPN.
/// Also the command's errors: a missing engine, a protocol without one, another protocol's engine,
/// a bad field, and `--print-config`.
let masterDnsVPNReplayGate = LabGate(tools: [("ip", "iproute2"), ("nft", "nftables"), ("redsocks", "redsocks")], binary: true)

@Suite(.serialized, .enabled(if: masterDnsVPNReplayGate.runs, "needs root, ip, nft, redsocks and the binary"))
struct MasterDnsVPNReplayLabTests {
    static let gate = masterDnsVPNReplayGate

    static let profile = """
        {"version":1,"name":"Family MasterDnsVPN","protocol":"masterdns","domain":"m.lab.test",
         "resolvers":[{"type":"udp","address":"198.18.0.1:53"}],"expectedExitIP":"198.18.2.1",
         "masterdns":{"encryptionLevel":"maximum","fecLevel":"balanced","fecDirection":"download"}}
        """

    final class Scratch {
        let directory: String
        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("tp-mdv-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        deinit { try? FileManager.default.removeItem(atPath: directory) }

        func write(_ name: String, _ text: String, mode: Int = 0o600) throws -> String {
            let path = directory + "/" + name
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
            return path
        }
    }

    /// The stand-in: prints the recorded log line by line, then stays up (or exits with `exit`),
    /// as the recorded client did. It records the config verify gave it, to check it.
    func replayer(_ scratch: Scratch, fixture: String, exit code: Int? = nil) throws -> String {
        let url = try #require(Bundle.module.url(forResource: "Fixtures/masterdnsvpn/\(fixture)", withExtension: "log"))
        let tail = code.map { "exit \($0)" } ?? "exec sleep 60"
        return try scratch.write("replay-\(fixture).sh", """
            #!/bin/sh
            # A replay of a recorded MasterDnsVPN client log, not an engine.
            cp "$2" \(scratch.directory)/seen-config.toml
            cp "$4" \(scratch.directory)/seen-resolvers.txt
            while IFS= read -r line; do printf '%s\\n' "$line"; sleep 0.005; done < '\(url.path)'
            \(tail)

            """, mode: 0o700)
    }

    func verify(_ arguments: [String], scratch: Scratch) async throws -> (status: Int32, error: String, report: VerifyReport?) {
        let out = scratch.directory + "/out-\(UUID().uuidString.prefix(8))"
        let outcome = try await Host.run([TestEnvironment.binary, "verify", "--out", out, "--quiet", "--seed", "18"] + arguments)
        let report = FileManager.default.contents(atPath: out + "/verify.json").flatMap { try? JSONDecoder().decode(VerifyReport.self, from: $0) }
        if let report {
            let namespaces = (try? await Host.run(["ip", "netns", "list"]).output) ?? ""
            #expect(!namespaces.contains(report.result.sandbox), "sandbox left behind: \(report.result.sandbox)")
        }
        return (outcome.status, outcome.error, report)
    }

    @Test func recordedGoodHandshakePasses() async throws {
        try Self.gate.check()
        let scratch = try Scratch()
        let profile = try scratch.write("p.json", Self.profile)
        let key = try scratch.write("key", "00112233445566778899aabbccddeeff\n")
        let engine = try replayer(scratch, fixture: "fec-balanced")
        let run = try await verify(["--profile", profile, "--engine", "masterdnsvpn", "--engine-path", engine, "--password-file", key,
                                    "--checks", "ipv6Leak", "--handshake-deadline", "10"], scratch: scratch)
        let report = try #require(run.report, "\(run.error)")
        #expect(run.status == 0, "\(run.error)")
        #expect(report.result.verdict == .pass, "\(report.result.reason ?? "")")
        #expect(report.result.handshake.ok)
        #expect(report.result.handshake.evidence == "session id 7, 1 accepted resolver (198.18.0.1:53)")
        let phase = try #require(report.result.phases.first { $0.name == "routes" })
        #expect(phase.ok && phase.detail?.contains("excluded 198.18.0.1") == true)
        // The bridge took the sandbox's TCP, the carrier left out of its redirect.
        let bridge = try #require(report.result.phases.first { $0.name == "bridge" })
        #expect(bridge.ok && bridge.detail?.contains("SOCKS5 127.0.0.1:18000") == true)
        let diagnostics = try #require(report.result.diagnostics.engine)
        #expect(diagnostics.sessionID == "7" && diagnostics.acceptedResolvers == 1 && diagnostics.selectedResolver == "198.18.0.1")
        #expect(diagnostics.fecRequested?.groupSize == 12)
        #expect(diagnostics.arqResends == nil && diagnostics.unavailable["arqResends"] != nil)
        // The config the stand-in was given is the profile's, with the key from the file.
        let config = try String(contentsOfFile: scratch.directory + "/seen-config.toml", encoding: .utf8)
        #expect(config.contains("DOMAINS = [\"m.lab.test\"]") && config.contains("ENCRYPTION_KEY = \"00112233445566778899aabbccddeeff\""))
        #expect(config.contains("DATA_ENCRYPTION_METHOD = 5"))
        #expect(try String(contentsOfFile: scratch.directory + "/seen-resolvers.txt", encoding: .utf8) == "198.18.0.1:53\n")
    }

    @Test(arguments: [
        ("wrong-key", "handshake timeout: no resolver accepted", "No valid connections found after MTU testing"),
        ("resolver-drop-debug", "handshake timeout: no resolver accepted", "No valid connections found after MTU testing"),
        ("server-busy", "handshake timeout: no session: the server rejected the session", "session init busy"),
    ])
    func recordedFailureIsNamedInTheClientsWords(fixture: String, reason: String, words: String) async throws {
        try Self.gate.check()
        let scratch = try Scratch()
        let profile = try scratch.write("p.json", Self.profile)
        let key = try scratch.write("key", "00112233445566778899aabbccddeeff\n")
        let engine = try replayer(scratch, fixture: fixture)
        let run = try await verify(["--profile", profile, "--engine-path", engine, "--password-file", key,
                                    "--checks", "ipv6Leak", "--handshake-deadline", "3"], scratch: scratch)
        let report = try #require(run.report, "\(run.error)")
        #expect(run.status == 1)
        #expect(report.result.verdict == .fail)
        let failure = try #require(report.result.failure)
        #expect(failure.phase == "handshake")
        #expect(failure.reason.hasPrefix(reason), "\(failure.reason)")
        #expect(failure.engineWords.first?.contains(words) == true, "\(failure.engineWords)")
        #expect(report.result.diagnostics.engine?.sessionID == nil)
    }

    @Test func recordedExitSaysWhy() async throws {
        try Self.gate.check()
        let scratch = try Scratch()
        let profile = try scratch.write("p.json", Self.profile)
        let key = try scratch.write("key", "00112233445566778899aabbccddeeff\n")
        let engine = try replayer(scratch, fixture: "exit-on-failure", exit: 1)
        let run = try await verify(["--profile", profile, "--engine-path", engine, "--password-file", key, "--checks", "ipv6Leak"], scratch: scratch)
        let failure = try #require(run.report?.result.failure, "\(run.error)")
        // The phase is the one the client was in when it exited: at start, or while verify waited for its handshake.
        #expect(["engine", "handshake"].contains(failure.phase))
        #expect(failure.reason.hasPrefix("engine exited") && failure.reason.hasSuffix("with status 1: Client startup failed: invalid LISTEN_PORT: 70000"),
                "\(failure.reason)")
        #expect(failure.exitCode == 1)
    }

    @Test func routeLoopIsReported() async throws {
        try Self.gate.check()
        let scratch = try Scratch()
        let profile = try scratch.write("p.json", Self.profile)
        let key = try scratch.write("key", "k\n")
        let engine = try replayer(scratch, fixture: "fec-balanced")
        let run = try await verify(["--profile", profile, "--engine-path", engine, "--password-file", key, "--checks", "ipv6Leak",
                                    "--no-carrier-exclusion"], scratch: scratch)
        let failure = try #require(run.report?.result.failure, "\(run.error)")
        #expect(failure.phase == "routes" && failure.reason.hasPrefix("route loop") && failure.reason.contains("198.18.0.1"))
    }

    // MARK: - errors, one line each

    @Test func missingEngineIsOneLineAndExit69() async throws {
        try Self.gate.check()
        let scratch = try Scratch()
        let profile = try scratch.write("p.json", Self.profile)
        let key = try scratch.write("key", "k\n")
        // PATH without any MasterDnsVPN client: one line naming what to build, never another engine.
        let outcome = try await Host.run(["/usr/bin/env", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", TestEnvironment.binary, "verify",
                                          "--profile", profile, "--password-file", key])
        #expect(outcome.status == 69)
        #expect(outcome.error.split(separator: "\n").count == 1, "\(outcome.error)")
        #expect(outcome.error.contains("masterdnsvpn-client") && outcome.error.contains("MasterDnsVPN"), "\(outcome.error)")
        #expect(!outcome.error.contains("iodine"))
        // A client.py is taken for the Python edition, and one without the edition's package is refused
        // as not being it (MasterDnsVPNPythonReplayLabTests runs the edition).
        let python = try scratch.write("client.py", "#!/bin/sh\n", mode: 0o700)
        let edition = try await Host.run([TestEnvironment.binary, "verify", "--profile", profile, "--password-file", key, "--engine-path", python])
        #expect(edition.status == 69 && edition.error.contains("not the MasterDnsVPN Python edition's client directory"), "\(edition.error)")
    }

    @Test(arguments: ["slipstream"])
    func protocolWithoutAnEngineIsExit69(name: String) async throws {
        try Self.gate.check()
        let scratch = try Scratch()
        let profile = try scratch.write("p.json", #"{"version":1,"name":"x","protocol":"\#(name)","domain":"t.example","resolvers":[{"address":"192.0.2.1"}]}"#)
        let outcome = try await Host.run([TestEnvironment.binary, "verify", "--profile", profile])
        #expect(outcome.status == 69)
        #expect(outcome.error.split(separator: "\n").count == 1 && outcome.error.contains("no \(name) engine"), "\(outcome.error)")
    }

    /// The iodine fallback is gone: a masterdns profile never runs iodine, even with an iodine section.
    @Test func anotherProtocolsEngineIsRefused() async throws {
        try Self.gate.check()
        let scratch = try Scratch()
        let profile = try scratch.write("p.json", String(Self.profile.dropLast()) + #","iodine":{"password":"p"}}"#)
        let outcome = try await Host.run([TestEnvironment.binary, "verify", "--profile", profile, "--engine", "iodine"])
        #expect(outcome.status == 64)
        #expect(outcome.error.split(separator: "\n").count == 1 && outcome.error.contains("cannot run a masterdns profile"), "\(outcome.error)")
    }

    @Test func printConfigRunsNothing() async throws {
        try Self.gate.check()
        let scratch = try Scratch()
        let profile = try scratch.write("p.json", Self.profile)
        let outcome = try await Host.run([TestEnvironment.binary, "verify", "--profile", profile, "--print-config", "--password", "secret-key"])
        #expect(outcome.status == 0, "\(outcome.error)")
        #expect(outcome.output.contains("DATA_ENCRYPTION_METHOD = 5") && outcome.output.contains("groupSize=12 overheadPercent=25"))
        #expect(!outcome.output.contains("secret-key"))
        let bad = try scratch.write("bad.json", Self.profile.replacingOccurrences(of: "\"balanced\"", with: "\"extreme\"")
            .replacingOccurrences(of: "\"download\"", with: "\"sideways\""))
        let refused = try await Host.run([TestEnvironment.binary, "verify", "--profile", bad, "--print-config"])
        #expect(refused.status == 66)
        #expect(refused.error.split(separator: "\n").count == 1 && refused.error.contains("masterdns.fecLevel")
                && refused.error.contains("masterdns.fecDirection"), "\(refused.error)")
    }
}
