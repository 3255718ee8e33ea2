import Foundation
import Lab
import Reports
import Testing
import TestSupport
@testable import TunnelVerify
import Results

/// One lab as a user with one delegation has it: the resolver delegates vpn.lab.test to the server
/// address, port 53 is `serve --forward`, iodined is moved to port 5300 behind it (with its client
/// address check on), and an impairment relay in front of the resolver (198.18.0.53) drops every
/// query name longer than 100 characters: probes of a short upload pass it, iodine's data does not.
actor ForwardLab {
    static let shared = ForwardLab()
    private var status: LabStatus?
    let name = "f" + String(UInt32.random(in: 0...UInt32.max), radix: 36).prefix(7)
    var binary: String { TestEnvironment.binary }

    func up() async throws -> LabStatus {
        if let status { return status }
        let config = LabConfig(name: name, qnameMinimisation: false, serverCommand: [binary, "serve", "--rate-limit", "0"],
                               impairCommand: [binary, "impair", "--seed", "3", "--up-max-qname", "100"],
                               tunnelBehindResponder: true)
        let made = try await Lab.up(config, logger: quietLogger)
        status = made
        return made
    }

    func down() async {
        guard status != nil else { return }
        status = nil
        do {
            try await Lab.down(name: name, logger: quietLogger)
        } catch {
            Issue.record("lab \(name) down: \(error)")
        }
        #expect(!FileManager.default.fileExists(atPath: "/run/netns/tp-\(name)-net"))
        let strays = await sandboxLeftovers(labClient: "tp-\(name)-cli")
        #expect(strays.isEmpty, "\(strays)")
    }
}

@Suite(.serialized, .teardown { await ForwardLab.shared.down() },
       .enabled(if: LabGate.tunnelLab.runs, "forward lab tests need root and the engines"))
struct ForwardLabTests {
    func lab() async throws -> LabStatus {
        try LabGate.tunnelLab.check()
        return try await ForwardLab.shared.up()
    }

    /// Runs `tunnelprobe scan` in the lab's client namespace; returns its report.
    func scan(_ lab: LabStatus, resolvers: [String], _ extra: [String] = []) async throws -> (status: Int32, report: ScanReport?, stderr: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tp-fwd-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let binary = await ForwardLab.shared.binary
        let argv = Lab.namespaceCommand(name: lab.name, role: .client, command: [
            binary, "scan", "--domain", lab.domain, "--key-file", lab.keyFile, "--out", directory, "--quiet", "--seed", "11",
        ] + resolvers.flatMap { ["--resolver", $0] } + extra)
        let outcome = try await Host.run(["/usr/bin/env"] + argv)
        let data = FileManager.default.contents(atPath: directory + "/scan.json")
        return (outcome.status, try data.map { try JSONDecoder().decode(ScanReport.self, from: $0) }, outcome.error)
    }

    func profile(_ lab: LabStatus, directory: String) throws -> String {
        let tunnel = try #require(lab.tunnel)
        let path = directory + "/profile.json"
        try """
            {"version":1,"name":"lab iodine behind serve --forward","protocol":"iodine","domain":"\(lab.domain)",
             "resolvers":[{"type":"udp","address":"\(tunnel.resolver):53"}],"expectedExitIP":"\(tunnel.exitAddress)",
             "dns":["\(tunnel.tunnelDNS)"],"iodine":{"passwordFile":"\(tunnel.iodinePasswordFile)"}}
            """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The tunnel server holds the lab's only delegation behind the responder: `scan` measures the
    /// pairs through it (its probes are answered by the responder) and `verify` with iodine passes
    /// through the very same resolver and address (its queries are relayed to iodined).
    @Test(.timeLimit(.minutes(2))) func scanAndVerifyPassThroughTheSameDelegation() async throws {
        let lab = try await lab()
        let tunnel = try #require(lab.tunnel)
        #expect(tunnel.domain == lab.domain, "iodined serves the probe domain itself")
        // iodined listens on port 5300 only, and with its client address check on (no -c).
        let pids = try #require(Host.readText(lab.stateDirectory + "/tunnel.pids"))
        let iodined = try #require(pids.split(separator: "\n").first { $0.hasPrefix("iodined ") }?.split(separator: " ").last)
        let cmdline = try #require(FileManager.default.contents(atPath: "/proc/\(iodined)/cmdline"))
        let argv = String(decoding: cmdline, as: UTF8.self).split(separator: "\0").map(String.init)
        #expect(argv.contains("5300") && !argv.contains("-c"), "\(argv)")
        let responder = try #require(lab.processes.first { $0.role == "responder" })
        let responderArgv = String(decoding: FileManager.default.contents(atPath: "/proc/\(responder.pid)/cmdline") ?? Data(), as: UTF8.self)
        #expect(responderArgv.contains("--forward\u{0}198.18.1.2:5300"))

        let scanned = try await scan(lab, resolvers: ["\(tunnel.resolver):53"])
        let report = try #require(scanned.report, "no scan report: \(scanned.stderr)")
        #expect(scanned.status == 0)
        let pair = try #require(report.pairs.first)
        #expect(pair.accepted, "\(pair.reason ?? "")")
        #expect((pair.upload?.qnameChars ?? 0) >= 250 && (pair.download?.bytes ?? 0) >= 1000, "\(pair)")

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tp-fwd-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let run = try await verify(lab, profile: try String(contentsOfFile: profile(lab, directory: directory), encoding: .utf8),
                                   ["--whoami-url", tunnel.whoamiURL])
        let verified = try #require(run.report, "no verify report: \(run.stderr)")
        #expect(run.status == 0, "\(verified.summaryLine)")
        #expect(verified.result.handshake.ok)
        #expect(verified.result.exitIP.observed == tunnel.exitAddress)
    }

    /// `scan --e2e`: the engine through each accepted pair, ranked by goodput; the impaired resolver
    /// passes every probe stage but fails end to end, in iodine's own words.
    @Test(.timeLimit(.minutes(3))) func endToEndRanksByGoodputAndShowsTheImpairedResolverFailing() async throws {
        let lab = try await lab()
        let tunnel = try #require(lab.tunnel)
        let impaired = try #require(lab.impairedResolverAddress)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tp-fwd-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bulk = try #require(tunnel.bulkURL)
        let resolvers = ["\(tunnel.resolver):53", "198.18.4.9:53", "\(impaired):53"]
        let scanned = try await scan(lab, resolvers: resolvers, [
            "--e2e", "--e2e-profile", try profile(lab, directory: directory), "--e2e-url", tunnel.whoamiURL,
            "--e2e-bulk-url", bulk, "--e2e-bulk-bytes", "32768", "--e2e-deadline", "8",
        ])
        let report = try #require(scanned.report, "no scan report: \(scanned.stderr)")
        #expect(report.pairs.count == 3 && report.pairs.allSatisfy(\.accepted), "\(report.pairs.map { $0.reason ?? "ok" })")
        let e2e = try #require(report.endToEnd, "no end-to-end section")
        #expect(e2e.engine == "iodine")
        #expect(e2e.runs.count == 3)
        let passing = e2e.runs.filter(\.ok)
        #expect(Set(passing.map(\.resolver)) == ["\(tunnel.resolver):53", "198.18.4.9:53"])
        let goodputs = passing.compactMap(\.goodputBytesPerSecond)
        #expect(goodputs.count == 2 && goodputs.allSatisfy { $0 > 0 })
        #expect(goodputs == goodputs.sorted(by: >), "ranked by goodput: \(goodputs)")
        #expect(passing.map(\.rank) == [1, 2])
        #expect(passing.allSatisfy { $0.bulkBytes == 32768 && ($0.handshakeMs ?? 0) > 0 && $0.firstDataMs != nil })
        let failing = try #require(e2e.runs.last)
        #expect(failing.resolver == "\(impaired):53" && !failing.ok && failing.rank == nil)
        #expect(!failing.engineWords.isEmpty, "the engine's own words: \(failing.reason ?? "")")
        #expect(scanned.status == 0)
    }

    /// The generic command engine goes end to end too, its command line pinned to each pair
    /// (`{resolver-ip}`, `{domain}`): here iodine started as a plain command.
    @Test(.timeLimit(.minutes(2))) func theCommandEngineIsPinnedToEachPair() async throws {
        let lab = try await lab()
        let tunnel = try #require(lab.tunnel)
        let password = try #require(Host.readText(tunnel.iodinePasswordFile)).trimmingCharacters(in: .whitespacesAndNewlines)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tp-fwd-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let scanned = try await scan(lab, resolvers: ["198.18.4.9:53"], [
            "--e2e", "--e2e-profile", try profile(lab, directory: directory), "--e2e-url", tunnel.whoamiURL,
            "--e2e-bulk-url", try #require(tunnel.bulkURL), "--e2e-bulk-bytes", "16384", "--e2e-deadline", "8",
            "--e2e-engine", "command", "--e2e-engine-command", "iodine -f -r -P \(password) -d {tun} {resolver-ip} {domain}",
            "--e2e-handshake-pattern", "Connection setup complete",
        ])
        let report = try #require(scanned.report, "no scan report: \(scanned.stderr)")
        let run = try #require(report.endToEnd?.runs.first, "no end-to-end run")
        #expect(report.endToEnd?.engine == "command")
        #expect(run.ok && run.resolver == "198.18.4.9:53", "\(run.reason ?? "")")
        #expect(run.bulkBytes == 16384 && (run.goodputBytesPerSecond ?? 0) > 0)
    }
}
