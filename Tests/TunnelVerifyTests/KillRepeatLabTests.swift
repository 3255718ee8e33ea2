import Base
import Foundation
import Lab
import Reports
import Testing
import TestSupport
@testable import TunnelVerify

/// `verify` killed at random moments, half with SIGINT and half with SIGKILL, each followed by an
/// ordinary run: the ordinary run reclaims what the killed one left (its owner is dead), so nothing
/// stays behind, and every SIGINT that lands before the run ends gives exit 130 and a report marked
/// incomplete. `TUNNELPROBE_KILL_RUNS` sets the number of killed runs (4 by default, as CI runs it;
/// `scripts/kill-repeat.sh 50` for the full figure); the moments come from a seeded generator whose
/// seed is printed (`TUNNELPROBE_KILL_SEED` repeats a sequence).
@Suite(.serialized, .teardown { await TunnelLab.shared.down() }, .enabled(if: LabGate.tunnelLab.runs, "verify lab tests need root and the engines"))
struct KillRepeatLabTests {
    @Test(.timeLimit(.minutes(60))) func killedAtRandomMomentsLeaveNothingBehind() async throws {
        try LabGate.tunnelLab.check()
        let lab = try await TunnelLab.shared.up()
        let environment = ProcessInfo.processInfo.environment
        let runs = Int(environment["TUNNELPROBE_KILL_RUNS"] ?? "") ?? 4
        let seed = UInt64(environment["TUNNELPROBE_KILL_SEED"] ?? "") ?? UInt64.random(in: 0...UInt64.max)
        print("kill repeat: \(runs) killed runs, seed \(seed)")
        var generator = SplitMix64(seed: seed)
        let binary = await TunnelLab.shared.binary
        var interrupted = 0, finishedFirst = 0
        for i in 0..<runs {
            let signal = i % 2 == 0 ? "INT" : "KILL"
            // From the first system calls (sandbox creation) to past the handshake and the checks.
            let seconds = Double.random(in: 0.02...12, using: &generator)
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tp-kill-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            try iodineProfile(lab).write(toFile: directory + "/p.json", atomically: true, encoding: .utf8)
            let script = "\"$@\" & pid=$!; sleep \(String(format: "%.3f", seconds)); kill -\(signal) $pid 2>/dev/null; wait $pid; echo $?"
            let outcome = try await Host.run(["/bin/sh", "-c", script, "sh"] + Lab.namespaceCommand(name: lab.name, role: .client, command: [
                binary, "verify", "--profile", directory + "/p.json", "--out", directory + "/out", "--quiet", "--deadline", "20"]))
            let status = Int32(outcome.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
            let what = "run \(i + 1) (SIG\(signal) after \(String(format: "%.2f", seconds)) s, seed \(seed))"
            if signal == "INT" {
                let data = FileManager.default.contents(atPath: directory + "/out/verify.json")
                let report = try data.map { try JSONDecoder().decode(VerifyReport.self, from: $0) }
                if status == 130 {
                    interrupted += 1
                    #expect(report.map { !$0.run.complete && $0.verdict == .incomplete } == true, "\(what): no incomplete report")
                } else {
                    // The run ended before the signal came: an ordinary verdict.
                    finishedFirst += 1
                    #expect((status == 0 || status == 1) && report != nil, "\(what): exit \(status)")
                }
            }
            // The next ordinary run reclaims whatever the killed one left, then cleans up after itself.
            let ordinary = try await verify(lab, profile: iodineProfile(lab))
            #expect(ordinary.report != nil, "\(what): the ordinary run after it wrote no report: \(ordinary.stderr)")
            let left = await sandboxLeftovers(labClient: lab.namespaces.client)
            #expect(left.isEmpty, "\(what): left behind after the ordinary run: \(left)")
        }
        print("kill repeat: \(runs) killed runs, \(interrupted) SIGINT runs exited 130, \(finishedFirst) finished before their SIGINT")
    }
}
