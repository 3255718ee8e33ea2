import Foundation
import Lab
import ProbeClient
import Reports
import Results
import Testing
import TestSupport

/// Issue 31 (b) on the simulated internet: `--passes` with the MTU scan (a lossy host first found in
/// a later pass is measured like any other), and `--expand-neighbours` with `--sample` (the report's
/// count of hosts found beyond the sample is the number the seeded mix put there).
@Suite(.serialized, .enabled(if: LabGate.labWithBinary.runs, "the simulated internet needs root, iproute2 and a built binary"))
struct SweepPassesNeighboursLabTests {
    /// A /21 where a tenth of the addresses answer and a tenth of those drop 30 % of queries, swept
    /// in 3 passes with the MTU scan: every lossy host found in pass 2 or 3 has its MTU scan in
    /// scan.json with a download size no larger than its UDP limit, as the hosts of pass 1 do.
    @Test(.timeLimit(.minutes(1)))
    func lossyHostsOfLaterPassesAreMeasured() async throws {
        try LabGate.labWithBinary.check()
        let sim = try SimulatedInternetProcess(seed: 311, answering: 0.1)
        var stopped = false
        defer { if !stopped { sim.stop() } }
        let ranges = sim.dir + "/slash21.txt"
        try "198.19.40.0/21\n".write(toFile: ranges, atomically: true, encoding: .utf8)
        let out = sim.dir + "/report"
        let p = sim.sweep(["--ranges", ranges, "--passes", "3", "--rate", "4000", "--timeout", "1", "--attempts", "4",
                           "--per-resolver-qps", "15", "--seed", "9", "--engine", "masterdnsvpn", "--out", out])
        try p.run()
        #expect(p.waitUntilExitOrKill(seconds: 50), "the sweep did not exit")
        #expect(p.terminationStatus == 0)
        let truth = try sim.truth
        let answers = try String(contentsOfFile: out + "/" + SweepJournal.answersFile, encoding: .utf8).split(separator: "\n")
            .compactMap { try? JSONDecoder().decode(SweepAnswer.self, from: Data($0.utf8)) }
        let report = try JSONDecoder().decode(ScanReport.self, from: Data(contentsOf: URL(fileURLWithPath: out + "/scan.json")))
        stopped = true
        sim.stop()

        let limits = Dictionary(truth.hosts.map { ($0.address, $0) }, uniquingKeysWith: { a, _ in a })
        let lossyLater = answers.filter { ($0.pass ?? 1) > 1 && limits[$0.address]?.behaviour == .lossy }
        #expect(lossyLater.count >= 2, "lossy hosts found after pass 1: \(lossyLater.count)")
        for answer in answers where answer.answering {
            let pair = report.pairs.first { $0.resolver == answer.address + ":53" }
            #expect(pair != nil, "\(answer.address) (pass \(answer.pass ?? 1)) has no MTU scan")
        }
        for answer in lossyLater {
            let pair = report.pairs.first { $0.resolver == answer.address + ":53" }
            let size = pair?.download?.responseSize
            #expect(size != nil, "\(answer.address), found in pass \(answer.pass ?? 1): no download size (\(pair?.stage.map { "\($0)" } ?? "-"): \(pair?.reason ?? "-"))")
            if let size, let limit = limits[answer.address]?.udpLimit { #expect(size <= limit, "\(answer.address): \(size) > \(limit)") }
        }
    }

    /// A /20 with 2 % answering, a sample of 256 and `--expand-neighbours /24`: the /24 of every
    /// host in the sample is swept, and `neighbours.beyondSample` in sweep.json equals the hosts the
    /// mix put in those /24s past the sample's end of the seeded walk (counted from truth.json and
    /// the permutation, not from the sweep).
    @Test(.timeLimit(.minutes(1)))
    func neighboursBeyondTheSampleAreThePlantedOnes() async throws {
        try LabGate.labWithBinary.check()
        let sim = try SimulatedInternetProcess(seed: 312, answering: 0.02, extra: ["--loss-rate", "0"])
        var stopped = false
        defer { if !stopped { sim.stop() } }
        let list = sim.dir + "/slash20.txt"
        try "198.19.96.0/20\n".write(toFile: list, atomically: true, encoding: .utf8)
        let out = sim.dir + "/report"
        let p = sim.sweep(["--ranges", list, "--sample", "256", "--expand-neighbours", "/24", "--sweep-only", "--rate", "4000",
                           "--timeout", "1", "--seed", "10", "--out", out])
        try p.run()
        #expect(p.waitUntilExitOrKill(seconds: 40), "the sweep did not exit")
        #expect(p.terminationStatus == 0)
        let truth = try sim.truth
        let sweep = try JSONDecoder().decode(SweepReport.self, from: Data(contentsOf: URL(fileURLWithPath: out + "/sweep.json")))
        let state = try JSONDecoder().decode(SweepJournal.State.self, from: Data(contentsOf: URL(fileURLWithPath: out + "/sweep.state")))
        stopped = true
        let counts = try #require(sim.stop(), "lab internet wrote no probes.json")

        let base = SweepRanges.parseIPv4("198.19.96.0")!
        let ranges = SweepRanges(blocks: [.init(first: base, count: 4096)])
        let permutation = SweepPermutation(count: 4096, seed: 10)
        let sampleEnd = try #require(state.firstPassEnd)
        func position(_ address: UInt32) -> UInt64 { permutation.position(of: ranges.index(of: address)!) }
        let hosts = truth.hosts.compactMap { SweepRanges.parseIPv4($0.address[...]) }.filter { $0 >> 12 == base >> 12 }
        let sampled = hosts.filter { position($0) < sampleEnd }
        let expandedPrefixes = Set(sampled.map { $0 >> 8 })
        let planted = hosts.filter { expandedPrefixes.contains($0 >> 8) && position($0) >= sampleEnd }
        #expect(!sampled.isEmpty && !planted.isEmpty, "\(sampled.count) hosts in the sample, \(planted.count) beyond it")
        let neighbours = try #require(sweep.neighbours)
        #expect(neighbours.beyondSample == planted.count, "report \(neighbours.beyondSample), planted \(planted.count)")
        #expect(neighbours.cutShort == nil)
        // Each expanded /24 in full, the rest of the sample once, nothing twice.
        #expect(counts.probedTwice.isEmpty)
        let sampledElsewhere = (0..<sampleEnd).compactMap { permutation.value(at: $0) }
            .filter { !expandedPrefixes.contains(ranges.address(at: $0) >> 8) }.count
        #expect(counts.addressesProbed == expandedPrefixes.count * 256 + sampledElsewhere)
    }
}
