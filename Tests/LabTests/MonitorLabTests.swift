import Foundation
import Lab
import ProbeClient
import Reports
import Testing
import TestSupport

/// Issue 19, item 4: `monitor` over a resolver the lab takes down and brings back.
@Suite(.serialized, .enabled(if: LabGate.labWithBinary.runs, "lab needs root, unbound, iproute2 and a built binary"))
struct MonitorLabTests {
    /// A relay in front of unbound is the resolver the lab stops and starts again; the lab's unbound
    /// itself stays up. The history shows the outage, the resolver file is rewritten twice (the relay
    /// left it, then came back), and a stop with SIGINT still writes the report and keeps the history.
    @Test(.timeLimit(.minutes(3))) func anOutageShowsInTheHistoryAndTheFileIsRewrittenTwice() async throws {
        try await withLab(limit: 1232) { lab in
            var relay = try RankLabTests.relay(lab, port: 5311, [])
            defer { relay.terminate(); relay.waitUntilExit() }
            try await Task.sleep(for: .milliseconds(800))
            let relayName = "\(lab.clientAddress):5311", directName = "\(lab.resolverAddress):53"
            let out = FileManager.default.temporaryDirectory.appendingPathComponent("tp-monitor-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: out) }
            let s = try run(Lab.namespaceCommand(name: lab.name, role: .client, command: [
                TestEnvironment.binary, "scan", "--domain", lab.domain, "--key-file", lab.keyFile, "--out", out + "/scan", "--quiet",
                "--seed", "1", "--timeout", "1", "--engine", "masterdnsvpn", "--resolver", relayName, "--resolver", lab.resolverAddress,
            ]))
            #expect(s.status == 0, "scan: \(s.stderr)")

            let monitor = Process()
            monitor.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            monitor.arguments = Lab.namespaceCommand(name: lab.name, role: .client, command: [
                TestEnvironment.binary, "monitor", "--scan", out + "/scan", "--key-file", lab.keyFile, "--out", out + "/monitor",
                "--quiet", "--seed", "3", "--interval", "0.5", "--timeout", "0.5", "--attempts", "1",
            ])
            monitor.standardOutput = FileHandle.nullDevice
            monitor.standardError = FileHandle.nullDevice
            try monitor.run()
            let clock = ContinuousClock()
            try await Task.sleep(for: .seconds(4))
            let killed = clock.now
            relay.terminate()
            relay.waitUntilExit()
            try await Task.sleep(for: .seconds(4))
            let restarted = clock.now
            relay = try RankLabTests.relay(lab, port: 5311, [])
            try await Task.sleep(for: .seconds(4))
            let stoppedAt = clock.now
            monitor.interrupt()
            #expect(monitor.waitUntilExitOrKill(seconds: 20), "monitor did not stop on SIGINT")
            #expect(monitor.terminationStatus == 130)

            let report = try JSONDecoder().decode(MonitorReport.self, from: Data(contentsOf: URL(fileURLWithPath: out + "/monitor/monitor.json")))
            #expect(report.schema == "tunnelprobe.monitor/1" && !report.run.complete && report.run.seed == 3)
            let stopped = try #require(report.pairs.first { $0.resolver == relayName })
            let steady = try #require(report.pairs.first { $0.resolver == directName })
            #expect(stopped.outages.count == 1 && stopped.outages.first?.upAt != nil, "\(stopped.outages)")
            #expect(stopped.up && stopped.transitions == 2 && stopped.passed < stopped.checks && stopped.lastFailureAt != nil)
            // Down from about the stop of the relay to about its start again (2 checks a second).
            let outage = try #require(stopped.outages.first)
            func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }
            let least = seconds(restarted - killed) - 1.5, most = seconds(stoppedAt - killed) + 1
            #expect((least...most).contains((outage.upAt ?? 0) - outage.downAt), "\(outage), expected \(least)...\(most) s")
            #expect(steady.passed == steady.checks && steady.outages.isEmpty && steady.lastFailureAt == nil, "\(steady)")
            #expect(report.rewrites == 2, "\(report.rewriteTimes)")
            // Every check is in the history, in order: up, down, up again for the relay.
            let lines = try String(contentsOfFile: out + "/monitor/history.jsonl", encoding: .utf8).split(separator: "\n")
            #expect(lines.count == report.checks)
            let relayStates = lines.filter { $0.contains("\"\(relayName)\"") }.map { $0.contains("\"ok\":true") }
            var runs: [Bool] = []
            for state in relayStates where runs.last != state { runs.append(state) }
            #expect(runs == [true, false, true], "\(relayStates)")
            let file = try String(contentsOfFile: out + "/monitor/exports/masterdnsvpn-go/client_resolvers.txt", encoding: .utf8)
            #expect(file.contains(relayName) && file.contains(lab.resolverAddress), "\(file)")
            #expect(FileManager.default.fileExists(atPath: out + "/monitor/monitor.md"))
        }
    }

    @Test func gateIsHonest() throws {
        if TestEnvironment.labRequired { try LabGate.labWithBinary.check() }
    }
}
