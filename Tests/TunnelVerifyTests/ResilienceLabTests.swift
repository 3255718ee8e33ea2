import Foundation
import Lab
import Reports
import Testing
import TestSupport
@testable import TunnelVerify

/// Lab tests of `resilience` and `verify --cycles`, on a lab of their own (the verify suite takes
/// its shared lab down at its end). iodine runs with `-m 1000`: a fixed fragment size skips its
/// 9-second fragment-size probe, the session still goes through the lab's real resolver.
let resilienceLab = TunnelLab()

func resilience(_ lab: LabStatus, profile: String, command: String = "resilience", binary: String? = nil, deadline: Int = 20,
                _ extra: [String]) async throws
    -> (status: Int32, report: ResilienceReport?, stderr: String, directory: String) {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tp-resil-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let path = directory + "/profile.json"
    try profile.write(toFile: path, atomically: true, encoding: .utf8)
    let resolved = if let binary { binary } else { await resilienceLab.binary }
    let argv = Lab.namespaceCommand(name: lab.name, role: .client, command: [
        resolved, command, "--profile", path, "--out", directory + "/out", "--quiet", "--seed", "7", "--deadline", "\(deadline)",
        "--whoami-url", lab.tunnel!.whoamiURL,
    ] + extra)
    let outcome = try await Host.run(["/usr/bin/env"] + argv)
    let data = FileManager.default.contents(atPath: directory + "/out/resilience.json")
    let report = try data.map { try JSONDecoder().decode(ResilienceReport.self, from: $0) }
    return (outcome.status, report, outcome.error, directory)
}

func fastIodineProfile(_ lab: LabStatus, extra: String = "") -> String {
    iodineProfile(lab, extra: extra).replacingOccurrences(of: #""iodine":{"#, with: #""iodine":{"extraArguments":["-m","1000"],"#)
}

/// Nested in the verify suite, which is serialized: both suites check that no sandbox is left on
/// the machine, so they must never run at the same time.
extension VerifierLabTests {
@Suite(.serialized, .teardown { await resilienceLab.down() }, .enabled(if: LabGate.tunnelLab.runs, "resilience lab tests need root and the engines"))
struct ResilienceLabTests {
    func lab() async throws -> LabStatus {
        try LabGate.tunnelLab.check()
        return try await resilienceLab.up()
    }

    func expectClean(_ lab: LabStatus) async {
        let left = await sandboxLeftovers(labClient: lab.namespaces.client)
        #expect(left.isEmpty, "left behind: \(left)")
    }

    @Test(.timeLimit(.minutes(1))) func iodineFiveCyclesPassAndLeaveNothing() async throws {
        let lab = try await lab()
        let run = try await resilience(lab, profile: fastIodineProfile(lab), command: "verify", ["--cycles", "5"])
        defer { try? FileManager.default.removeItem(atPath: run.directory) }
        let report = try #require(run.report, "no report: \(run.stderr)")
        #expect(run.status == 0, "\(report.summaryLine)")
        #expect(report.cycles.count == 5 && report.cycles.allSatisfy(\.ok), "\(report.cycles)")
        #expect(report.cycles.allSatisfy { ($0.handshakeMs ?? -1) >= 0 && ($0.firstDataMs ?? -1) >= ($0.handshakeMs ?? 0) })
        let leftovers = try #require(report.leftovers)
        #expect(leftovers.clean, "\(leftovers)")
        await expectClean(lab)
    }

    /// An engine that leaves a child running behind it: the leftover check names the process.
    @Test(.timeLimit(.minutes(1))) func aProcessLeftBehindIsNamed() async throws {
        let lab = try await lab()
        let t = lab.tunnel!
        let script = FileManager.default.temporaryDirectory.appendingPathComponent("tp-stray-\(UUID().uuidString).sh").path
        try """
            sleep 120 &
            exec iodine -f -r -m 1000 -P "$(cat "$3")" -d "$1" "$2" \(t.domain)

            """.write(toFile: script, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: script) }
        let run = try await resilience(lab, profile: iodineProfile(lab), command: "verify", [
            "--cycles", "2", "--engine", "command", "--engine-command", "/bin/sh \(script) {tun} \(t.resolver) \(t.iodinePasswordFile)",
            "--handshake-pattern", "Connection setup complete",
        ])
        defer { try? FileManager.default.removeItem(atPath: run.directory) }
        let report = try #require(run.report, "no report: \(run.stderr)")
        #expect(run.status == 1)
        #expect(report.cycles.allSatisfy { $0.ok })
        #expect(report.leftovers?.processes.contains { $0.contains("sleep 120") } == true, "\(String(describing: report.leftovers))")
        await expectClean(lab)
    }

    /// Every scenario against iodine: a recovery time or an explicit non-recovery, recovery and
    /// losses that agree with the probe log written next to the report, nothing leaked.
    @Test(.timeLimit(.minutes(1))) func iodineScenariosRecoverAsTheProbeLogSays() async throws {
        let lab = try await lab()
        let run = try await resilience(lab, profile: fastIodineProfile(lab), ["--outage", "1", "--recovery-bound", "8"])
        defer { try? FileManager.default.removeItem(atPath: run.directory) }
        let report = try #require(run.report, "no report: \(run.stderr)")
        #expect(report.scenarios.map(\.scenario) == ["uplink-down-1s", "address-change", "resolver-outage-1s", "engine-restart"])
        for scenario in report.scenarios {
            #expect(scenario.recoverySeconds != nil || scenario.recoveryNote == "did not recover within 8 s", "\(scenario.scenario)")
            if scenario.scenario == "engine-restart" {
                // While the restarted iodine sets its TUN address again, the routes through the
                // device are gone until the tool re-applies them: a probe may leave in clear. The
                // capture decides, and each such packet is named.
                #expect(scenario.leaked != nil)
                #expect(scenario.leakEvidence.allSatisfy { $0.destination != nil })
            } else {
                #expect(scenario.leaked == false, "\(scenario.scenario): \(scenario.leakEvidence.map(\.summary))")
            }
            // The numbers come from the probe log: recompute them from the CSV.
            let log = try String(contentsOfFile: run.directory + "/out/" + (scenario.probeLog ?? "?"), encoding: .utf8)
            let rows = log.split(separator: "\n").dropFirst().map { $0.split(separator: ",", omittingEmptySubsequences: false) }
            #expect(rows.count == scenario.requestsSent)
            #expect(rows.filter { $0[1] == "0" }.count == scenario.requestsLost)
            if let recovery = scenario.recoverySeconds {
                let first = try #require(rows.first { Int($0[0])! >= scenario.disruptionEndMs && $0[1] == "1" })
                #expect(abs(Double(Int(first[0])! + Int(first[2])! - scenario.disruptionEndMs) / 1000 - recovery) < 0.0005)
            }
            #expect(rows.contains { Int($0[0])! < scenario.disruptionStartMs && $0[1] == "1" }, "\(scenario.scenario): no traffic before")
        }
        #expect(report.scenarios.last?.engineRestarted == "tool")
        await expectClean(lab)
    }

    /// iodine shuts itself down after 60 s without downstream data ("No downstream data received
    /// in 60 seconds, shutting down"): a 62 s resolver outage makes it do so. The scenario says the
    /// engine exited, and the next scenario finds it gone and starts it again instead of measuring
    /// a dead engine as "did not recover".
    @Test(.timeLimit(.minutes(3))) func anEngineThatShutItselfDownIsStartedAgain() async throws {
        let lab = try await lab()
        let run = try await resilience(lab, profile: fastIodineProfile(lab), [
            "--scenarios", "resolver-outage,address-change", "--outage", "62", "--recovery-bound", "5",
        ])
        defer { try? FileManager.default.removeItem(atPath: run.directory) }
        let report = try #require(run.report, "no report: \(run.stderr)")
        #expect(report.scenarios.map(\.scenario) == ["resolver-outage-62s", "address-change"])
        let outage = try #require(report.scenarios.first)
        #expect(outage.recoverySeconds == nil && outage.recoveryNote == "did not recover within 5 s (the engine exited)", "\(outage)")
        #expect(outage.notes.contains { $0.hasPrefix("the engine exited during the scenario (status") && $0.contains("No downstream data received in 60 seconds") },
                "\(outage.notes)")
        let after = try #require(report.scenarios.last)
        #expect(after.notes.contains { $0.hasPrefix("before this scenario the engine had exited") }, "\(after.notes)")
        #expect(after.recoverySeconds != nil, "\(after)")
        // The page's summary lists every note, each named by its scenario.
        let html = report.result.htmlSection()
        for note in outage.notes + after.notes { #expect(html.contains(HTML.escape(note)), "\(note)") }
        await expectClean(lab)
    }

    /// The same disruptions against wireguard-go, so one report compares engines.
    @Test(.timeLimit(.minutes(1))) func wireguardGoRecoversFromUplinkLossAndRestart() async throws {
        let lab = try await lab()
        let t = lab.tunnel!
        let profile = """
            {"version":1,"name":"lab wireguard","protocol":"wireguard","expectedExitIP":"\(t.exitAddress)","dns":["\(t.tunnelDNS)"],
             "wireguard":{"endpoint":"\(t.wireguardEndpoint)","keyFile":"\(t.wireguardClientKeyFile)",
                          "address":"\(t.wireguardClientAddress)","peerPublicKey":"\(t.wireguardServerPublicKey)"}}
            """
        let run = try await resilience(lab, profile: profile, ["--scenarios", "uplink-down,engine-restart", "--outage", "1", "--recovery-bound", "8"])
        defer { try? FileManager.default.removeItem(atPath: run.directory) }
        let report = try #require(run.report, "no report: \(run.stderr)")
        #expect(report.engine == "wireguard")
        #expect(report.scenarios.map(\.scenario) == ["uplink-down-1s", "engine-restart"])
        #expect(report.scenarios.allSatisfy { $0.recoverySeconds != nil && $0.leaked == false }, "\(report.summaryLine): \(report.scenarios.map { "\($0.scenario): \($0.recoveryNote ?? "recovered") \($0.notes)" })")
        await expectClean(lab)
    }

    /// A split tunnel whose routes are wrong: the misrouted packets are named on both sides.
    @Test(.timeLimit(.minutes(1))) func wrongSplitRoutesAreCaught() async throws {
        let lab = try await lab()
        let profile = fastIodineProfile(lab, extra: #","split":{"include":["198.18.2.0/24","198.18.3.0/24"]}"#)
        let good = try await resilience(lab, profile: profile, ["--scenarios", "none"])
        defer { try? FileManager.default.removeItem(atPath: good.directory) }
        let fine = try #require(good.report?.split, "no report: \(good.stderr)")
        #expect(fine.ok && good.status == 0, "\(fine)")
        let bad = try await resilience(lab, profile: profile, ["--scenarios", "none", "--apply-split", "include 198.18.2.0/24,203.0.113.0/24"])
        defer { try? FileManager.default.removeItem(atPath: bad.directory) }
        let wrong = try #require(bad.report?.split, "no report: \(bad.stderr)")
        #expect(bad.status == 1 && !wrong.ok)
        #expect(!wrong.clearOnUplink.isEmpty && wrong.clearOnUplink.allSatisfy { $0.destination == "198.18.3.1" })
        #expect(!wrong.insideTunnel.isEmpty && wrong.insideTunnel.allSatisfy { $0.destination == "203.0.113.1" })
        await expectClean(lab)
    }

    /// SIGINT in the middle of an uplink outage: exit 130, the partial report, nothing left.
    @Test(.timeLimit(.minutes(1))) func sigintDuringAnOutageRestoresAndKeepsThePartialReport() async throws {
        let lab = try await lab()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tp-resil-int-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try fastIodineProfile(lab).write(toFile: directory + "/p.json", atomically: true, encoding: .utf8)
        let binary = await resilienceLab.binary
        // Engine up in well under a second, baseline 1 s, then a 20 s outage: the signal lands in it.
        let script = "\"$@\" & pid=$!; sleep 3; kill -INT $pid; wait $pid; echo $?"
        let outcome = try await Host.run(["/bin/sh", "-c", script, "sh"] + Lab.namespaceCommand(name: lab.name, role: .client, command: [
            binary, "resilience", "--profile", directory + "/p.json", "--whoami-url", lab.tunnel!.whoamiURL, "--out", directory + "/out",
            "--quiet", "--scenarios", "uplink-down", "--outage", "20"]))
        #expect(outcome.output.trimmingCharacters(in: .whitespacesAndNewlines) == "130")
        let data = try #require(FileManager.default.contents(atPath: directory + "/out/resilience.json"))
        let report = try JSONDecoder().decode(ResilienceReport.self, from: data)
        #expect(report.verdict == .incomplete && !report.run.complete)
        #expect(report.scenarios.first?.scenario == "uplink-down-20s")
        await expectClean(lab)
    }
}
}

/// iodine through the lab's default resolver, unbound with QNAME minimisation on (RFC 9156), as
/// real resolvers run. unbound asks iodined for the tunnel domain plus the *last* data label of
/// iodine's name alone (QTYPE A) and sends the full name only after that times out (IodineNames):
/// with iodine's defaults data barely crosses. The nearest faithful client configuration names
/// its data in one label (`-M 74` for t.lab.test) and uses CNAME queries, the only type that
/// survives the resolver's A-first query (`-T CNAME`; iodine's own detection finds it after 15 s).
let qnameLab = TunnelLab(qnameMinimisation: true)

func oneLabelIodineProfile(_ lab: LabStatus) -> String {
    let limit = IodineNames(domain: lab.tunnel!.domain, arguments: []).oneLabelLimit
    return iodineProfile(lab).replacingOccurrences(of: #""iodine":{"#, with: #""iodine":{"extraArguments":["-T","CNAME","-M","\#(limit)"],"#)
}

extension VerifierLabTests {
@Suite(.serialized, .teardown { await qnameLab.down() }, .enabled(if: LabGate.tunnelLab.runs, "QNAME-minimisation lab tests need root and the engines"))
struct QNAMEMinimisationLabTests {
    func lab() async throws -> LabStatus {
        try LabGate.tunnelLab.check()
        return try await qnameLab.up()
    }

    /// Each cycle is judged by verify's own timing rule (PhaseTiming, default deadline 25 s). Five
    /// starts take five of iodined's 16 user slots (each held a minute after its client's last
    /// query); a start refused for want of one fails with that reason ("Server full").
    @Test(.timeLimit(.minutes(3))) func fiveCyclesPassThroughTheDefaultResolver() async throws {
        let lab = try await lab()
        let run = try await resilience(lab, profile: oneLabelIodineProfile(lab), command: "verify", deadline: 25, ["--cycles", "5"])
        defer { try? FileManager.default.removeItem(atPath: run.directory) }
        let report = try #require(run.report, "no report: \(run.stderr)")
        #expect(run.status == 0, "\(report.summaryLine) \(report.cycles)")
        #expect(report.cycles.count == 5 && report.cycles.allSatisfy(\.ok), "\(report.cycles)")
        #expect(report.cycles.allSatisfy { $0.handshakeMs != nil && ($0.firstDataMs ?? -1) >= ($0.handshakeMs ?? 0) })
        let leftovers = try #require(report.leftovers)
        #expect(leftovers.clean, "\(leftovers)")
    }

    /// With iodine's defaults the failure is named for what it is, not a bare "no data".
    @Test(.timeLimit(.minutes(3))) func iodineDefaultsFailWithTheNamedReason() async throws {
        let lab = try await lab()
        let run = try await verify(lab, profile: iodineProfile(lab), deadline: 40, ["--whoami-url", lab.tunnel!.whoamiURL])
        let report = try #require(run.report, "no report: \(run.stderr)")
        #expect(report.verdict == .fail, "\(report.summaryLine)")
        #expect(report.summaryLine.contains("looks QNAME-minimising") && report.summaryLine.contains("-M 74"), "\(report.summaryLine)")
    }
}
}
