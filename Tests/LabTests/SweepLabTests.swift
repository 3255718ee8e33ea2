import Foundation
import Glibc
import Lab
import ProbeClient
import Reports
import Testing
import TestSupport
import Results

/// The simulated internet (`lab internet`) running in the background for one test: started with a
/// directory of its own, stopped (SIGTERM: it removes its namespace and writes probes.json) whatever happens.
final class SimulatedInternetProcess {
    let dir: String
    let process = Process()
    private(set) var namespace = ""

    init(seed: UInt64, answering: Double, extra: [String] = []) throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("tp-sim-\(UUID().uuidString)").path
        process.executableURL = URL(fileURLWithPath: TestEnvironment.binary)
        process.arguments = ["lab", "internet", "--dir", dir, "--seed", String(seed), "--answering", String(answering)] + extra
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(30)
        while !FileManager.default.fileExists(atPath: dir + "/ready") {
            guard process.isRunning, Date() < deadline else {
                stop()
                throw SweepLabFailure("lab internet did not get ready (status \(process.isRunning ? "running" : String(process.terminationStatus)))")
            }
            usleep(50_000)
        }
        namespace = try String(contentsOfFile: dir + "/netns", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    var truth: SimulatedInternet.Truth {
        get throws { try JSONDecoder().decode(SimulatedInternet.Truth.self, from: Data(contentsOf: URL(fileURLWithPath: dir + "/truth.json"))) }
    }

    /// Stops it and returns what its hosts received.
    @discardableResult
    func stop() -> SimulatedResponder.ProbeCounts? {
        if process.isRunning {
            process.terminate()
            _ = process.waitUntilExitOrKill(seconds: 20)
        }
        defer { try? FileManager.default.removeItem(atPath: dir) }
        guard let data = FileManager.default.contents(atPath: dir + "/probes.json") else { return nil }
        return try? JSONDecoder().decode(SimulatedResponder.ProbeCounts.self, from: data)
    }

    /// `tunnelprobe sweep` inside the namespace, as a process not yet started.
    func sweep(_ arguments: [String]) -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["ip", "netns", "exec", namespace, TestEnvironment.binary, "sweep", "--domain", "vpn.sim.test",
                       "--key-file", dir + "/key.hex", "--quiet"] + arguments
        p.standardOutput = FileHandle.nullDevice
        return p
    }
}

struct SweepLabFailure: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

@Suite(.serialized, .enabled(if: LabGate.labWithBinary.runs, "the simulated internet needs root, iproute2 and a built binary"))
struct SweepLabTests {
    /// A /19 of the simulated internet (8,192 addresses, 2 % answering), swept at 3,000 packets per
    /// second: stopped with SIGINT once about half is swept, then resumed. The run ends with every
    /// host that always answers found, the accepted set exactly the truth's honest, slow and
    /// rate-limited hosts (their limit of 20 queries per second is above the scan's 10 per
    /// resolver), every hijacker rejected at honesty, and every address of the /19 sent exactly one
    /// sweep probe over both runs (counted by the simulated hosts themselves).
    @Test(.timeLimit(.minutes(4)))
    func interruptedAndResumedSweepEndsWithTheSameAcceptedSet() async throws {
        try LabGate.labWithBinary.check()
        let sim = try SimulatedInternetProcess(seed: 21, answering: 0.02)
        var stopped = false
        defer { if !stopped { sim.stop() } }
        let ranges = sim.dir + "/slash19.txt"
        try "198.19.32.0/19  # a part of the simulated /16\n".write(toFile: ranges, atomically: true, encoding: .utf8)
        let out = sim.dir + "/report"
        let common = ["--ranges", ranges, "--rate", "3000", "--timeout", "1", "--per-resolver-qps", "10", "--seed", "5",
                      "--engine", "masterdnsvpn"]

        let first = sim.sweep(common + ["--out", out])
        try first.run()
        // Stop once about half the /19 is swept, as the write-ahead state says.
        let deadline = Date().addingTimeInterval(30)
        var emitted: UInt64 = 0
        while first.isRunning, Date() < deadline {
            if let data = FileManager.default.contents(atPath: out + "/sweep.state"),
               let state = try? JSONDecoder().decode(SweepJournal.State.self, from: data) {
                emitted = state.checkpoint.emitted
                if emitted >= 4096 { break }
            }
            usleep(20_000)
        }
        #expect(first.isRunning, "the sweep ended before it could be interrupted")
        first.interrupt()
        #expect(first.waitUntilExitOrKill(seconds: 60), "the interrupted sweep did not exit")
        #expect(first.terminationStatus == 130)
        let cut = try JSONDecoder().decode(SweepJournal.State.self, from: Data(contentsOf: URL(fileURLWithPath: out + "/sweep.state")))
        #expect(cut.checkpoint.settled, "the interrupted sweep did not settle its checkpoint")
        #expect(cut.checkpoint.emitted > 0 && cut.checkpoint.emitted < 8192, "interrupted at \(cut.checkpoint.emitted) of 8192")

        let second = sim.sweep(common + ["--resume", out])
        try second.run()
        #expect(second.waitUntilExitOrKill(seconds: 120), "the resumed sweep did not exit")
        #expect(second.terminationStatus == 0)
        let report = try JSONDecoder().decode(ScanReport.self, from: Data(contentsOf: URL(fileURLWithPath: out + "/scan.json")))
        let sweep = try JSONDecoder().decode(SweepSummary.self, from: Data(contentsOf: URL(fileURLWithPath: out + "/sweep.json")))
        let truth = try sim.truth
        let answering = Set(try String(contentsOfFile: out + "/answering.txt", encoding: .utf8).split(separator: "\n").map(String.init))
        stopped = true
        let counts = try #require(sim.stop(), "lab internet wrote no probes.json")

        #expect(sweep.complete && sweep.runs == 2 && sweep.swept == 8192)
        #expect(counts.probedTwice.isEmpty, "probed twice: \(counts.probedTwice.keys.sorted().prefix(10))")
        #expect(counts.sweepProbes == 8192 && counts.addressesProbed == 8192)

        let inRange = truth.hosts.filter { host in
            let v = SweepRanges.parseIPv4(host.address[...]) ?? 0
            return v >> 13 == SweepRanges.parseIPv4("198.19.32.0")! >> 13
        }
        #expect(inRange.count > 80, "the /19 holds \(inRange.count) answering hosts")
        let always = inRange.filter { $0.behaviour != .lossy }
        let missing = always.filter { !answering.contains($0.address) }
        #expect(missing.isEmpty, "not found: \(missing.prefix(10))")
        let silentAnswering = answering.subtracting(inRange.map(\.address))
        #expect(silentAnswering.isEmpty, "answers from silent addresses: \(silentAnswering.prefix(10))")

        let accepted = Set(report.pairs.filter(\.accepted).map { String($0.resolver.split(separator: ":")[0]) })
        let expected = Set(inRange.filter { [SimulatedInternet.Behaviour.honest, .slow, .rateLimited].contains($0.behaviour) }.map(\.address))
        let lossy = Set(inRange.filter { $0.behaviour == .lossy }.map(\.address))
        #expect(expected.subtracting(accepted).isEmpty, "not accepted: \(expected.subtracting(accepted).sorted().prefix(10))")
        #expect(accepted.subtracting(expected).subtracting(lossy).isEmpty,
                "accepted but not honest: \(accepted.subtracting(expected).subtracting(lossy).sorted().prefix(10))")
        for host in inRange where host.behaviour == .hijacker {
            let pair = report.pairs.first { $0.resolver == host.address + ":53" }
            #expect(pair?.stage == .honesty, "hijacker \(host.address): \(pair?.reason ?? "not measured")")
        }
        // Each pair measured once, over both runs.
        #expect(Set(report.pairs.map(\.resolver)).count == report.pairs.count)
    }
}

/// The fields of sweep.json this test reads.
struct SweepSummary: Decodable {
    var complete: Bool
    var runs: Int
    var swept: UInt64
}
