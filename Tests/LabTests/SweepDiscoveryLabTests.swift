import Foundation
import Lab
import ProbeClient
import Results
import Reports
import Testing
import TestSupport

/// Issue 31 on the simulated internet: --country over an RIR delegated file, --passes against lossy
/// hosts, and four --shard runs merged against one unsharded run. Each sweeps a part of the /16 at a
/// few thousand packets per second (the whole /16 is the benchmark's, scripts/bench-sweep.sh).
@Suite(.serialized, .enabled(if: LabGate.labWithBinary.runs, "the simulated internet needs root, iproute2 and a built binary"))
struct SweepDiscoveryLabTests {
    /// A delegated file names pieces of 198.19.0.0/16 under IR, TR and DE (counts that are not
    /// powers of two among them); `--country IR --country TR` probes exactly the IR and TR pieces,
    /// once each, as the simulated hosts count them.
    @Test(.timeLimit(.minutes(1)))
    func countrySweepsExactlyTheNamedPieces() async throws {
        try LabGate.labWithBinary.check()
        let sim = try SimulatedInternetProcess(seed: 31, answering: 0.02)
        var stopped = false
        defer { if !stopped { sim.stop() } }
        let file = sim.dir + "/delegated-ripencc-extended-latest"
        try """
            2.3|ripencc|20261126|5|19830705|20261125|+0100
            ripencc|*|ipv4|*|5|summary
            ripencc|IR|ipv4|198.19.0.0|768|20100101|allocated
            ripencc|DE|ipv4|198.19.3.0|256|20100101|allocated
            ripencc|TR|ipv4|198.19.4.0|1000|20110101|assigned
            ripencc|IR|ipv4|198.19.200.0|512|20120101|allocated
            ripencc|DE|ipv4|198.19.16.0|4096|20120101|allocated
            ripencc|IR|ipv6|2001:db8::|32|20100101|allocated

            """.write(toFile: file, atomically: true, encoding: .utf8)
        let out = sim.dir + "/report"
        let p = sim.sweep(["--ranges", file, "--country", "IR", "--country", "tr", "--sweep-only", "--rate", "4000",
                           "--timeout", "0.5", "--seed", "3", "--out", out])
        try p.run()
        #expect(p.waitUntilExitOrKill(seconds: 40), "the sweep did not exit")
        #expect(p.terminationStatus == 0)
        let sweep = try JSONDecoder().decode(SweepFiles.self, from: Data(contentsOf: URL(fileURLWithPath: out + "/sweep.json")))
        stopped = true
        let counts = try #require(sim.stop(), "lab internet wrote no probes.json")
        #expect(counts.probedRanges == ["198.19.0.0-198.19.2.255", "198.19.4.0-198.19.7.231", "198.19.200.0-198.19.201.255"])
        #expect(counts.probedTwice.isEmpty)
        #expect(counts.sweepProbes == 768 + 1000 + 512)
        let delegated = try #require(sweep.rangeFiles.first)
        #expect(delegated.format == .delegated && delegated.sha256.count == 64)
        #expect(delegated.countries?["IR"] == ["198.19.0.0/23", "198.19.2.0/24", "198.19.200.0/23"])
        #expect(delegated.countries?["TR"] == ["198.19.4.0/23", "198.19.6.0/24", "198.19.7.0/25", "198.19.7.128/26",
                                                "198.19.7.192/27", "198.19.7.224/29"])
    }

    /// --passes 3 on a /18 where a tenth of the addresses answer, a fifth of those dropping 30 % of
    /// queries: at least 95 % of the lossy hosts and every other host found; every address probed
    /// once in each pass until it answered (the simulated hosts' own count matches each answer's
    /// pass), so none twice in one pass.
    @Test(.timeLimit(.minutes(1)))
    func passesFindTheLossyHosts() async throws {
        try LabGate.labWithBinary.check()
        let sim = try SimulatedInternetProcess(seed: 32, answering: 0.1)
        var stopped = false
        defer { if !stopped { sim.stop() } }
        let ranges = sim.dir + "/slash18.txt"
        try "198.19.64.0/18\n".write(toFile: ranges, atomically: true, encoding: .utf8)
        let out = sim.dir + "/report"
        let p = sim.sweep(["--ranges", ranges, "--passes", "3", "--sweep-only", "--rate", "4000", "--timeout", "0.5",
                           "--seed", "4", "--out", out])
        try p.run()
        #expect(p.waitUntilExitOrKill(seconds: 45), "the sweep did not exit")
        #expect(p.terminationStatus == 0)
        let truth = try sim.truth
        let answers = try String(contentsOfFile: out + "/" + SweepJournal.answersFile, encoding: .utf8).split(separator: "\n")
            .compactMap { try? JSONDecoder().decode(SweepAnswer.self, from: Data($0.utf8)) }
        let sweep = try JSONDecoder().decode(SweepFiles.self, from: Data(contentsOf: URL(fileURLWithPath: out + "/sweep.json")))
        stopped = true
        let counts = try #require(sim.stop(), "lab internet wrote no probes.json")

        let base = SweepRanges.parseIPv4("198.19.64.0")!
        let hosts = truth.hosts.filter { (SweepRanges.parseIPv4($0.address[...]) ?? 0) >> 14 == base >> 14 }
        let found = Set(answers.filter(\.answering).map(\.address))
        let lossy = hosts.filter { $0.behaviour == .lossy }
        let reliable = hosts.filter { $0.behaviour != .lossy }
        #expect(lossy.count > 120, "the /18 holds \(lossy.count) lossy hosts")
        let lossyFound = lossy.filter { found.contains($0.address) }.count
        #expect(Double(lossyFound) >= 0.95 * Double(lossy.count), "lossy found: \(lossyFound) of \(lossy.count)")
        let missed = reliable.filter { !found.contains($0.address) }
        #expect(missed.isEmpty, "reliable hosts missed: \(missed.prefix(5))")
        #expect(found.isSubset(of: Set(hosts.map(\.address))))
        // Probes per address: its answer's pass, or 3 when it never answered.
        let pass = Dictionary(answers.map { ($0.address, $0.pass ?? 1) }, uniquingKeysWith: min)
        var wrong: [String] = []
        for offset in UInt32(0)..<16_384 {
            let a = SweepRanges.describe(base + offset)
            let expected = pass[a] ?? 3
            let got = counts.probedTwice[a] ?? 1
            if got != expected { wrong.append("\(a): \(got) probes, expected \(expected)") }
        }
        #expect(wrong.isEmpty, "\(wrong.count) addresses: \(wrong.prefix(5))")
        #expect(counts.addressesProbed == 16_384)
        let figures = try #require(sweep.passes)
        #expect(figures.map(\.pass) == [1, 2, 3] && figures[0].probed == 16_384)
        #expect(figures.reduce(0) { $0 + $1.newAnswering } == found.count)
        #expect(figures[1].newAnswering > 0, "the second pass added nothing")
    }

    /// Four `--shard I/4` sweeps (with the MTU scan) of a /20 probe every address once together, and
    /// `report merge` of them gives the answering and accepted sets of one unsharded sweep of the same
    /// seed, with each shard's vantage. The lossy hosts are made reliable (--loss-rate 0) so the two
    /// sweeps can be compared address by address.
    @Test(.timeLimit(.minutes(2)))
    func fourShardsMergeToTheUnshardedSweep() async throws {
        try LabGate.labWithBinary.check()
        // The four shards run at once (as on four machines), at 2,000 pps each.
        let common = ["--rate", "2000", "--timeout", "1", "--per-resolver-qps", "10", "--seed", "6", "--engine", "masterdnsvpn"]
        let sim = try SimulatedInternetProcess(seed: 33, answering: 0.02, extra: ["--loss-rate", "0"])
        var stopped = false
        defer { if !stopped { sim.stop() } }
        let ranges = sim.dir + "/slash20.txt"
        try "198.19.128.0/20\n".write(toFile: ranges, atomically: true, encoding: .utf8)
        var shards: [Process] = []
        for i in 0..<4 {
            let p = sim.sweep(["--ranges", ranges, "--shard", "\(i)/4", "--vantage", "machine-\(i)", "--out", sim.dir + "/shard\(i)"] + common)
            try p.run()
            shards.append(p)
        }
        for p in shards {
            #expect(p.waitUntilExitOrKill(seconds: 60), "a shard did not exit")
            #expect(p.terminationStatus == 0)
        }
        let whole = sim.sweep(["--ranges", ranges, "--out", sim.dir + "/whole"] + common)
        try whole.run()
        #expect(whole.waitUntilExitOrKill(seconds: 60), "the unsharded sweep did not exit")
        #expect(whole.terminationStatus == 0)

        let merge = Process()
        merge.executableURL = URL(fileURLWithPath: TestEnvironment.binary)
        merge.arguments = ["report", "merge"] + (0..<4).map { sim.dir + "/shard\($0)" } + ["--out", sim.dir + "/merged", "--quiet"]
        merge.standardOutput = FileHandle.nullDevice
        try merge.run()
        #expect(merge.waitUntilExitOrKill(seconds: 30))
        #expect(merge.terminationStatus == 0)
        func lines(_ path: String) throws -> Set<String> {
            Set(try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init))
        }
        let mergedAnswering = try lines(sim.dir + "/merged/answering.txt")
        let wholeAnswering = try lines(sim.dir + "/whole/answering.txt")
        let mergedAccepted = try lines(sim.dir + "/merged/accepted.txt")
        let wholeAccepted = try lines(sim.dir + "/whole/accepted.txt")
        let merged = try JSONDecoder().decode(SweepShardMerge.Merged.self, from: Data(contentsOf: URL(fileURLWithPath: sim.dir + "/merged/sweep.json")))
        stopped = true
        let counts = try #require(sim.stop(), "lab internet wrote no probes.json")
        // The four shards and the unsharded run: every address of the /20 exactly twice.
        #expect(counts.addressesProbed == 4096)
        #expect(counts.addressesByProbeCount == ["2": 4096], "\(counts.addressesByProbeCount ?? [:])")
        #expect(wholeAnswering.count > 40, "the /20 answered \(wholeAnswering.count)")
        #expect(mergedAnswering == wholeAnswering,
                "only merged: \(mergedAnswering.subtracting(wholeAnswering).sorted().prefix(5)); only whole: \(wholeAnswering.subtracting(mergedAnswering).sorted().prefix(5))")
        #expect(!wholeAccepted.isEmpty)
        #expect(mergedAccepted == wholeAccepted,
                "only merged: \(mergedAccepted.subtracting(wholeAccepted).sorted().prefix(5)); only whole: \(wholeAccepted.subtracting(mergedAccepted).sorted().prefix(5))")
        #expect(merged.complete && merged.missingShards.isEmpty)
        #expect(merged.shards.map(\.vantage) == ["machine-0", "machine-1", "machine-2", "machine-3"])
    }
}

/// The fields of sweep.json these tests read.
struct SweepFiles: Decodable {
    struct Pass: Decodable {
        var pass: Int
        var probed: UInt64
        var newAnswering: Int
    }

    var rangeFiles: [SweepRangeFile]
    var passes: [Pass]?
}
