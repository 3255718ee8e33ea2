import Foundation
import Lab
import ProbeClient
import Reports
import Testing
import TestSupport
import Results

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
            #expect(report.schema == MonitorReport.schemaName && !report.run.complete && report.run.seed == 3)
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

    /// The relay comes back dropping query names over 100 characters: the pair answers small
    /// queries but not its scan's sizes. `monitor` calls those checks MTU drift, not an outage of
    /// the resolver, and finds the query size that passes now (about 85 payload characters under
    /// vpn.lab.test) while the answer size is untouched.
    @Test(.timeLimit(.minutes(3))) func aShrunkQueryLimitIsMTUDriftNotAnOutage() async throws {
        try await withLab(limit: 1232) { lab in
            var relay = try RankLabTests.relay(lab, port: 5312, [])
            defer { relay.terminate(); relay.waitUntilExit() }
            try await Task.sleep(for: .milliseconds(800))
            let relayName = "\(lab.clientAddress):5312"
            let out = FileManager.default.temporaryDirectory.appendingPathComponent("tp-monitor-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: out) }
            let s = try run(Lab.namespaceCommand(name: lab.name, role: .client, command: [
                TestEnvironment.binary, "scan", "--domain", lab.domain, "--key-file", lab.keyFile, "--out", out + "/scan", "--quiet",
                "--seed", "1", "--timeout", "1", "--engine", "masterdnsvpn", "--resolver", relayName,
            ]))
            #expect(s.status == 0, "scan: \(s.stderr)")
            let monitor = Process()
            monitor.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            monitor.arguments = Lab.namespaceCommand(name: lab.name, role: .client, command: [
                TestEnvironment.binary, "monitor", "--scan", out + "/scan", "--key-file", lab.keyFile, "--out", out + "/monitor",
                "--quiet", "--seed", "4", "--interval", "0.5", "--timeout", "0.5", "--attempts", "1",
            ])
            monitor.standardOutput = FileHandle.nullDevice
            monitor.standardError = FileHandle.nullDevice
            try monitor.run()
            try await Task.sleep(for: .seconds(2))
            relay.terminate()
            relay.waitUntilExit()
            relay = try RankLabTests.relay(lab, port: 5312, ["--up-max-qname", "100"])
            try await Task.sleep(for: .seconds(5))
            monitor.interrupt()
            #expect(monitor.waitUntilExitOrKill(seconds: 20), "monitor did not stop on SIGINT")
            let report = try JSONDecoder().decode(MonitorReport.self, from: Data(contentsOf: URL(fileURLWithPath: out + "/monitor/monitor.json")))
            let pair = try #require(report.pairs.first { $0.resolver == relayName })
            #expect(pair.sizeFailures >= 3, "\(pair)")
            #expect(pair.leastAnswerBytes == nil, "\(pair)")
            let query = try #require(pair.leastQueryCharacters, "\(pair)")
            #expect((60...90).contains(query), "query size found \(query)")
            let lines = try String(contentsOfFile: out + "/monitor/history.jsonl", encoding: .utf8).split(separator: "\n")
            #expect(lines.contains { $0.contains("\"drift\":{\"queryCharacters\":") && $0.contains("\"answerBytes\":null") })
            let md = try String(contentsOfFile: out + "/monitor/monitor.md", encoding: .utf8)
            #expect(md.contains("failed at the scan's sizes, smaller passed (least: query \(query) characters)"), "\(md)")
        }
    }

    /// Issue 19: monitor re-measures each pair's sustainable rate. Two rate limiters in front of
    /// the lab's unbound: A polices at 100 q/s (the excess REFUSED), B at 70 q/s (the excess
    /// dropped). After A's first measurement its limiter is restarted at 50 q/s; A's next
    /// measurement must find the new limit. Each figure within 15 % of the configured one; the
    /// engine's resolver file follows the latest goodput (A before B, then B before A); the rate
    /// lines of history.jsonl, monitor.json's first/latest/lowest and monitor.md show it.
    @Test(.timeLimit(.minutes(2))) func aRateLimitThatChangesIsMeasuredAgain() async throws {
        try await withLab(limit: 1232) { lab in
            let policer = ["--up-rate-burst", "5", "--up-rate-queue", "0"]
            var relayA = try RankLabTests.relay(lab, port: 5313, ["--up-rate", "100", "--up-rate-excess", "refuse"] + policer)
            let relayB = try RankLabTests.relay(lab, port: 5314, ["--up-rate", "70"] + policer)
            defer {
                for p in [relayA, relayB] { p.terminate(); p.waitUntilExit() }
            }
            try await Task.sleep(for: .milliseconds(800))
            let nameA = "\(lab.clientAddress):5313", nameB = "\(lab.clientAddress):5314"
            let out = FileManager.default.temporaryDirectory.appendingPathComponent("tp-monitor-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: out) }
            // B first in the scan, so that a file with A first can only come from the rates.
            let s = try run(Lab.namespaceCommand(name: lab.name, role: .client, command: [
                TestEnvironment.binary, "scan", "--domain", lab.domain, "--key-file", lab.keyFile, "--out", out + "/scan", "--quiet",
                "--seed", "1", "--timeout", "1", "--per-resolver-qps", "20", "--engine", "masterdnsvpn", "--resolver", nameB, "--resolver", nameA,
            ]))
            #expect(s.status == 0, "scan: \(s.stderr)")

            let monitor = Process()
            monitor.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            monitor.arguments = Lab.namespaceCommand(name: lab.name, role: .client, command: [
                TestEnvironment.binary, "monitor", "--scan", out + "/scan", "--key-file", lab.keyFile, "--out", out + "/monitor",
                "--quiet", "--seed", "5", "--interval", "0.5", "--timeout", "0.5", "--attempts", "1",
                "--rate-interval", "26", "--rate-start", "25", "--rate-step-seconds", "1.5", "--rate-pause-seconds", "0.2",
                "--rate-timeout", "0.5", "--rate-ceiling", "200", "--rate-pair-budget", "22",
            ])
            monitor.standardOutput = FileHandle.nullDevice
            monitor.standardError = FileHandle.nullDevice
            try monitor.run()
            defer { if monitor.isRunning { monitor.interrupt(); _ = monitor.waitUntilExitOrKill(seconds: 20) } }
            let historyPath = out + "/monitor/history.jsonl", filePath = out + "/monitor/exports/masterdnsvpn-go/client_resolvers.txt"
            func rateLines(_ name: String) -> [[String: Any]] {
                let text = (try? String(contentsOfFile: historyPath, encoding: .utf8)) ?? ""
                return text.split(separator: "\n").compactMap { line in
                    guard line.contains("\"rate\""), let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                          object["resolver"] as? String == name else { return nil }
                    return object["rate"] as? [String: Any]
                }
            }
            func resolverFile() -> [String] {
                ((try? String(contentsOfFile: filePath, encoding: .utf8)) ?? "").split(separator: "\n").filter { !$0.hasPrefix("#") }.map(String.init)
            }
            func waitFor(seconds: Double, _ done: () -> Bool) async throws -> Bool {
                let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
                while ContinuousClock.now < deadline {
                    if done() { return true }
                    try await Task.sleep(for: .milliseconds(200))
                }
                return done()
            }
            // Both first measurements (about 16 s for A: 9 steps; B is measured beside it).
            #expect(try await waitFor(seconds: 40) { rateLines(nameA).count >= 1 && rateLines(nameB).count >= 1 }, "no first rates")
            #expect(try await waitFor(seconds: 2) { resolverFile() == [lab.clientAddress + ":5313", lab.clientAddress + ":5314"] },
                    "A's goodput is the higher one: \(resolverFile())")
            // A's limiter restarted at 50 q/s before A is due again: 26 s after its first began, which
            // took at most its 22 s budget.
            relayA.terminate()
            relayA.waitUntilExit()
            relayA = try RankLabTests.relay(lab, port: 5313, ["--up-rate", "50", "--up-rate-excess", "refuse"] + policer)
            #expect(try await waitFor(seconds: 40) { rateLines(nameA).count >= 2 }, "no second rate for A")
            monitor.interrupt()
            #expect(monitor.waitUntilExitOrKill(seconds: 20), "monitor did not stop on SIGINT")
            #expect(monitor.terminationStatus == 130)

            let a = rateLines(nameA), b = rateLines(nameB)
            func rate(_ line: [String: Any]) -> Double { line["sustainableRate"] as? Double ?? -1 }
            func near(_ measured: Double, _ configured: Double) -> Bool { abs(measured - configured) <= 0.15 * configured }
            let firstA = try #require(a.first), secondA = try #require(a.dropFirst().first), firstB = try #require(b.first)
            #expect(near(rate(firstA), 100), "A first: \(firstA)")
            #expect(near(rate(secondA), 50), "A after the restart: \(secondA)")
            #expect(near(rate(firstB), 70), "B: \(firstB)")
            for line in [firstA, secondA, firstB] {
                #expect(line["limitedBy"] as? String == "rateLimiter", "\(line)")
                #expect((line["loss"] as? [String: Any])?["samples"] as? Int ?? 0 > 0 && (line["rttMs"] as? [String: Any])?["p99"] != nil, "\(line)")
            }
            // The second measurement began after the first ended (and so after the restart).
            let firstEnd = (firstA["at"] as? Double ?? 0) + (firstA["seconds"] as? Double ?? 0)
            #expect((secondA["at"] as? Double ?? 0) >= firstEnd, "\(firstA) / \(secondA)")
            #expect(resolverFile() == [nameB, nameA], "B's goodput is the higher one now: \(resolverFile())")

            let report = try JSONDecoder().decode(MonitorReport.self, from: Data(contentsOf: URL(fileURLWithPath: out + "/monitor/monitor.json")))
            #expect(report.schema == MonitorReport.schemaName && report.rates?.intervalSeconds == 26 && report.rates?.capacity.ceiling == 200)
            let pairA = try #require(report.pairs.first { $0.resolver == nameA }?.rates)
            #expect(pairA.measurements >= 2 && pairA.first.sustainableRate == rate(firstA) && pairA.last.sustainableRate == rate(secondA))
            #expect(pairA.lowest == pairA.last && pairA.highest == pairA.first)
            let md = try String(contentsOfFile: out + "/monitor/monitor.md", encoding: .utf8)
            #expect(md.contains("## Sustainable rate over time") && md.contains("| \(nameA) | \(lab.domain) | \(pairA.measurements) | "), "\(md)")
            print("monitor rates: A \(rate(firstA)) then \(rate(secondA)) q/s (configured 100, then 50), B \(rate(firstB)) q/s (configured 70)")
        }
    }

    @Test func gateIsHonest() throws {
        if TestEnvironment.labRequired { try LabGate.labWithBinary.check() }
    }
}
