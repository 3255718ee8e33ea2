import Fates
import Base
import DNSWire
import Foundation
import Lab
import PathMetrics
import ProbeProtocol
import Reports
import Testing
import TestSupport
import Results

/// Files for the `path` command tests: bad input, interruption, and a run through the lab's real unbound.
enum PathFixtures {
    static func keyFile() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("tp-path-\(UUID().uuidString).key").path
        try String(repeating: "ab", count: 32).write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func outDirectory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("tp-path-\(UUID().uuidString)").path
    }

    /// SIGTERM to `serve`: it must exit in order within 10 s (status 0, no watchdog line), else it
    /// is killed and the failure shows every thread's state from /proc.
    static func expectOrderlyStop(_ server: Process, log: String) {
        server.terminate()
        let stopped = server.waitUntilExit(seconds: 10)
        #expect(stopped, "serve still ran 10 s after SIGTERM (killed):\n\(server.procDiagnostics())")
        if !stopped { _ = server.waitUntilExitOrKill(seconds: 0) }
        let said = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(server.terminationReason == .exit && server.terminationStatus == 0 && !said.contains("exiting"),
                "serve: status \(server.terminationStatus), said: \(said)")
    }

    /// Whether `process` wrote `line` into its stderr file `file` within 10 s (false at once when it
    /// exits first): the line `serve` and `impair` say once they are bound and their signal handling
    /// is in place, so a test may signal them as soon as it is there.
    static func waitForLine(_ line: String, in file: String, of process: Process) -> Bool {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if ((try? String(contentsOfFile: file, encoding: .utf8)) ?? "").contains(line) { return true }
            guard process.isRunning else { return false }
            usleep(10_000)
        }
        return false
    }

    /// `serve` on a free loopback port, its stderr in a file, once it says it is serving (bound; at
    /// most 10 s); tries other ports while the one it got is taken by the time it binds (exit 69,
    /// "Address already in use").
    static func startServe(key: String) throws -> (process: Process, port: Int, log: String) {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("tp-serve-\(UUID().uuidString).log").path
        for _ in 0..<5 {
            let port = LoopbackPort.unused()
            _ = FileManager.default.createFile(atPath: log, contents: nil)
            let server = Process()
            server.executableURL = URL(fileURLWithPath: TestEnvironment.binary)
            server.arguments = ["serve", "--domain", "vpn.lab.test", "--key-file", key, "--listen", "127.0.0.1:\(port)",
                                "--rate-limit", "0"]
            server.standardError = FileHandle(forWritingAtPath: log)
            try server.run()
            if waitForLine("serving vpn.lab.test on 127.0.0.1:\(port)", in: log, of: server) || server.isRunning {
                return (server, port, log)
            }
            let said = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            guard said.contains("Address already in use") else { return (server, port, log) }
        }
        throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "no free loopback port for serve after 5 tries"])
    }
}

@Suite(.serialized, .enabled(if: LabGate.binary.runs, "needs the built binary"))
struct PathCommandTests {
    /// SIGINT: the report is written with what was measured, marked incomplete, and the exit code is 130.
    @Test(.timeLimit(.minutes(1))) func interruptedRunWritesAnIncompleteReport() async throws {
        try LabGate.binary.check()
        let key = try PathFixtures.keyFile()
        let out = PathFixtures.outDirectory()
        let (server, port, serveLog) = try PathFixtures.startServe(key: key)
        defer {
            try? FileManager.default.removeItem(atPath: serveLog)
            if server.isRunning {
                server.terminate()
                _ = server.waitUntilExitOrKill(seconds: 10)
            }
            try? FileManager.default.removeItem(atPath: key)
            try? FileManager.default.removeItem(atPath: out)
        }
        let client = Process()
        client.executableURL = URL(fileURLWithPath: TestEnvironment.binary)
        client.arguments = ["path", "--domain", "vpn.lab.test", "--key-file", key, "--quiet", "--out", out,
                            "--resolver", "127.0.0.1:\(port)", "--count", "100000", "--rate", "200", "--tmax", "0.5", "--seed", "9"]
        client.standardError = FileHandle.nullDevice
        try client.run()
        try await Task.sleep(for: .seconds(2))
        client.interrupt()
        // Once in this stop's runs this wait never returned (the test process spun for 13 minutes):
        // bounded, so a path that misses its SIGINT fails the test instead of holding the run.
        let exited = client.waitUntilExitOrKill(seconds: 10)
        #expect(exited, "path still ran 10 s after SIGINT (killed)")
        guard exited else { return }
        #expect(client.terminationStatus == 130)
        let data = try Data(contentsOf: URL(fileURLWithPath: out + "/path.json"))
        let report = try JSONDecoder().decode(PathReport.self, from: data)
        #expect(!report.run.complete && report.run.interruption == "SIGINT" && report.run.seed == 9)
        let r = try #require(report.resolvers.first)
        #expect(r.counts.sent > 50 && r.counts.sent < 100_000)
        // Only probes whose Tmax had run out are in the report, and on loopback they all came back.
        #expect(r.counts.answered == r.counts.sent, "\(r.counts)")
        #expect(FileManager.default.fileExists(atPath: out + "/path.md"))
        // The responder that streamed to the interrupted client still stops on SIGTERM, in order
        // (status 0), not by its watchdog (status 1) and not by SIGKILL.
        PathFixtures.expectOrderlyStop(server, log: serveLog)
    }

    /// SIGTERM to `serve` while a `path` client is streaming through it: it exits in order within
    /// seconds (stop 23 once saw a `serve` that took the signal and never left its stop).
    @Test(.timeLimit(.minutes(1))) func serveStopsOnSIGTERMWhileAClientStreams() async throws {
        try LabGate.binary.check()
        let key = try PathFixtures.keyFile()
        let out = PathFixtures.outDirectory()
        let (server, port, serveLog) = try PathFixtures.startServe(key: key)
        let client = Process()
        defer {
            for process in [client, server] where process.isRunning {
                process.terminate()
                _ = process.waitUntilExitOrKill(seconds: 10)
            }
            try? FileManager.default.removeItem(atPath: key)
            try? FileManager.default.removeItem(atPath: out)
            try? FileManager.default.removeItem(atPath: serveLog)
        }
        client.executableURL = URL(fileURLWithPath: TestEnvironment.binary)
        client.arguments = ["path", "--domain", "vpn.lab.test", "--key-file", key, "--quiet", "--out", out,
                            "--resolver", "127.0.0.1:\(port)", "--count", "100000", "--rate", "400", "--tmax", "0.5", "--seed", "11"]
        client.standardError = FileHandle.nullDevice
        try client.run()
        try await Task.sleep(for: .milliseconds(1500))
        #expect(server.isRunning && client.isRunning)
        let sent = Date()
        PathFixtures.expectOrderlyStop(server, log: serveLog)
        #expect(Date().timeIntervalSince(sent) < 5, "serve took \(Date().timeIntervalSince(sent)) s to stop")
        client.interrupt()
        #expect(client.waitUntilExitOrKill(seconds: 10), "path still ran 10 s after SIGINT (killed)")
    }
}

@Suite(.serialized, .enabled(if: LabGate.labWithBinary.runs, "lab needs root, unbound, iproute2 and a built binary"))
struct LabPathTests {
    /// Through the real unbound on clean veth links: every probe comes back, nothing is lost either way,
    /// and the fates and per-probe records are written.
    @Test(.timeLimit(.minutes(3))) func pathThroughTheRealResolver() async throws {
        try await withLab(limit: nil) { lab in
            let out = PathFixtures.outDirectory()
            defer { try? FileManager.default.removeItem(atPath: out) }
            let argv = Lab.namespaceCommand(name: lab.name, role: .client, command: [
                TestEnvironment.binary, "path", "--domain", lab.domain, "--key-file", lab.keyFile, "--out", out, "--quiet",
                "--resolver", lab.resolverAddress, "--count", "600", "--rate", "200", "--size", "100:300", "--seed", "4",
                "--shared-clock", "--export-fates", out + "/fates.json", "--records", out + "/records.jsonl",
            ])
            let r = try run(argv)
            #expect(r.status == 0, "path exited \(r.status): \(r.stderr)")
            let report = try JSONDecoder().decode(PathReport.self, from: Data(contentsOf: URL(fileURLWithPath: out + "/path.json")))
            let result = try #require(report.resolvers.first)
            #expect(result.counts.sent == 600 && result.counts.answered == 600, "\(result.counts)")
            #expect(result.loss.up.ratio == 0 && result.loss.down.ratio == 0 && result.counts.lostUnknown == 0)
            #expect(result.rttMs.p50 != nil && result.oneWayMs?.up.p50 != nil)
            let fates = try FateTrace.load(path: out + "/fates.json")
            #expect(fates.streams.map(\.direction) == [.up, .down] && fates.streams[0].packets.count == 600)
            let lines = try String(contentsOfFile: out + "/records.jsonl", encoding: .utf8).split(separator: "\n")
            #expect(lines.count == 600)
            // A record's QNAME (what a relay log shows) maps back to its stream and seq.
            let line = try #require(try JSONSerialization.jsonObject(with: Data(lines[7].utf8)) as? [String: Any])
            let name = try DNSName(try #require(line["qname"] as? String))
            let probe = try PathProbe.identify(name, zone: try DNSName(lab.domain), key: try ProbeKey.load(path: lab.keyFile)).probe
            #expect(probe.seq == 7 && probe.stream == result.stream.id && line["seq"] as? Int == 7)
        }
    }
}
