import Base
import Foundation
import Reports
import Testing
import TestSupport
@testable import TunnelVerify

/// `verify --engine dnstt` through its whole lifecycle (sandbox, command line, engine, TUN, routes,
/// bridge, handshake rule, verdict, cleanup) with a stand-in engine that REPLAYS a dnstt-client log
/// recorded against the real dnstt-server behind the lab's resolver (Fixtures/dnstt/README.md).
/// The stand-in is not an engine: it prints the recording and sends nothing. CI builds no engine.
/// Also the command's errors: a missing dnstt-client (exit 69) and `--print-config`.
let dnsttReplayGate = LabGate(tools: [("ip", "iproute2"), ("nft", "nftables"), ("redsocks", "redsocks")], binary: true)

@Suite(.serialized, .enabled(if: dnsttReplayGate.runs, "needs root, ip, nft, redsocks and the binary"))
struct DnsttReplayLabTests {
    static let gate = dnsttReplayGate

    static let profile = """
        {"version":1,"name":"Family dnstt","protocol":"dnstt","domain":"t.lab.test",
         "resolvers":[{"type":"udp","address":"198.18.0.1:53"}],"expectedExitIP":"198.18.2.1",
         "dnstt":{"pubkey":"\(DnsttEngineTests.pubkey)"}}
        """

    /// The MasterDnsVPN replay's scratch directory and `verify` runner (seed 18, sandbox checked gone).
    typealias Scratch = MasterDnsVPNReplayLabTests.Scratch

    /// The stand-in: records its arguments, prints the recorded client log line by line to stderr
    /// (where dnstt-client's `log` writes), then stays up as the recorded client did.
    func replayer(_ scratch: Scratch, fixture: String) throws -> String {
        let url = try #require(Bundle.module.url(forResource: "Fixtures/dnstt/\(fixture).client", withExtension: "log"))
        return try scratch.write("replay-\(fixture).sh", """
            #!/bin/sh
            # A replay of a recorded dnstt-client log, not an engine.
            printf '%s\\n' "$@" > \(scratch.directory)/seen-args.txt
            while IFS= read -r line; do printf '%s\\n' "$line" >&2; sleep 0.005; done < '\(url.path)'
            exec sleep 60

            """, mode: 0o700)
    }

    func verify(_ arguments: [String], scratch: Scratch) async throws -> (status: Int32, error: String, report: VerifyReport?) {
        try await MasterDnsVPNReplayLabTests().verify(arguments, scratch: scratch)
    }

    @Test func recordedHandshakePasses() async throws {
        try Self.gate.check()
        let scratch = try Scratch()
        let profile = try scratch.write("p.json", Self.profile)
        let engine = try replayer(scratch, fixture: "udp-ok")
        let run = try await verify(["--profile", profile, "--engine", "dnstt", "--engine-path", engine,
                                    "--checks", "ipv6Leak", "--handshake-deadline", "10"], scratch: scratch)
        let report = try #require(run.report, "\(run.error)")
        #expect(run.status == 0, "\(run.error)")
        #expect(report.result.verdict == .pass, "\(report.result.reason ?? "")")
        #expect(report.result.handshake.ok)
        #expect(report.result.handshake.evidence?.hasSuffix("begin stream d4cccd4c:3 (Noise handshake done, session d4cccd4c)") == true,
                "\(report.result.handshake.evidence ?? "")")
        let routes = try #require(report.result.phases.first { $0.name == "routes" })
        #expect(routes.ok && routes.detail?.contains("excluded 198.18.0.1") == true)
        let bridge = try #require(report.result.phases.first { $0.name == "bridge" })
        #expect(bridge.ok && bridge.detail?.contains("SOCKS5 127.0.0.1:7000") == true)
        #expect(report.result.diagnostics.session == "session d4cccd4c")
        // The command line verify gave the stand-in is the profile's.
        let seen = try String(contentsOfFile: scratch.directory + "/seen-args.txt", encoding: .utf8)
        #expect(seen == "-udp\n198.18.0.1:53\n-pubkey\n\(DnsttEngineTests.pubkey)\nt.lab.test\n127.0.0.1:7000\n")
    }

    @Test(arguments: [
        ("wrong-key", "handshake timeout: the Noise handshake got no reply", "begin session 8d2894e5"),
        ("doh-refused", "the DoH server refused the queries", "got \"404 Not Found\""),
    ])
    func recordedFailureIsNamed(fixture: String, reason: String, words: String) async throws {
        try Self.gate.check()
        let scratch = try Scratch()
        let profile = try scratch.write("p.json", Self.profile)
        let engine = try replayer(scratch, fixture: fixture)
        let run = try await verify(["--profile", profile, "--engine-path", engine, "--checks", "ipv6Leak", "--handshake-deadline", "4"],
                                   scratch: scratch)
        let report = try #require(run.report, "\(run.error)")
        #expect(run.status == 1)
        let failure = try #require(report.result.failure)
        #expect(failure.phase == "handshake")
        #expect(failure.reason.hasPrefix(reason), "\(failure.reason)")
        #expect(failure.engineWords.first?.contains(words) == true, "\(failure.engineWords)")
    }

    @Test func missingClientIsOneLineAndExit69() async throws {
        try Self.gate.check()
        let scratch = try Scratch()
        let profile = try scratch.write("p.json", Self.profile)
        let outcome = try await Host.run(["/usr/bin/env", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", TestEnvironment.binary, "verify", "--profile", profile])
        #expect(outcome.status == 69)
        #expect(outcome.error.split(separator: "\n").count == 1, "\(outcome.error)")
        #expect(outcome.error.contains("dnstt-client") && outcome.error.contains("www.bamsoftware.com/git/dnstt.git"), "\(outcome.error)")
        #expect(!outcome.error.contains("iodine") && !outcome.error.contains("MasterDnsVPN"))
    }

    @Test func printConfigRunsNothing() async throws {
        try Self.gate.check()
        let scratch = try Scratch()
        let profile = try scratch.write("p.json", Self.profile)
        let outcome = try await Host.run([TestEnvironment.binary, "verify", "--profile", profile, "--print-config"])
        #expect(outcome.status == 0, "\(outcome.error)")
        #expect(outcome.output.contains("dnstt-client -udp 198.18.0.1:53 -pubkey \(DnsttEngineTests.pubkey) t.lab.test 127.0.0.1:7000"))
    }
}
