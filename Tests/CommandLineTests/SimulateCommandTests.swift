import Fates
import Base
import Foundation
import Reports
import Testing
import Results

/// The command as a user runs it, in process through the binary's entry point (`TunnelProbe.execute`):
/// one error line and exit 66 on bad input, a report otherwise. `BinarySmokeTests` runs one of each
/// through the built binary.
struct SimulateCommandTests {
    /// `tunnelprobe simulate ARGUMENTS` (or another subcommand given as `command`).
    static func run(_ arguments: [String], command: [String] = ["simulate"]) async -> InProcess.Outcome {
        await InProcess.run(command + arguments)
    }

    @Test(arguments: [
        (["--model", "bernoulli:p=0.05", "--levels", "turbo"], "unknown FEC level"),
        (["--model", "bernoulli:p=0.05", "--levels", "200:3"], "k must be"),
        (["--model", "bernoulli:p=0.05", "--levels", "10:0"], "m must be"),
        (["--model", "bernoulli:p=1.5"], "p must be in [0, 1]"),
        (["--model", "ge:p=0.1,h=0.2"], "needs p= and r="),
        (["--model", "bernoulli:p=0.1", "--traffic", "cbr"], "rate= is required"),
        ([String](), "give --fates FILE, --pcap FILE or --model SPEC"),
        (["--model", "bernoulli:p=0.05", "--engine", "masterdnsvpn"], "--engine needs --mtu"),
        (["--model", "bernoulli:p=0.05", "--engine", "dnstt", "--mtu", "900"], "has no frame layout"),
        (["--model", "bernoulli:p=0.05", "--engine", "masterdnsvpn", "--mtu", "900", "--symbol-size", "512"], "drop --symbol-size"),
        (["--model", "bernoulli:p=0.05", "--mtu", "900"], "--mtu goes with --engine"),
    ])
    func badFlagsGiveOneLineAndExit66(arguments: [String], message: String) async throws {
        let r = await Self.run(arguments + ["--out", NSTemporaryDirectory() + "tp-sim-never"])
        #expect(r.status == 66)
        #expect(r.stderr.hasPrefix("tunnelprobe: error: ") && r.stderr.contains(message), "\(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1)
    }

    @Test(arguments: [("", "empty file"), ("{\"schema\":", "not JSON"),
                      ("{\"schema\":\"tunnelprobe.fates/1\",\"source\":{\"kind\":\"trace\",\"description\":\"x\"},\"streams\":[]}", "no streams")])
    func badFatesFilesGiveOneLineAndExit66(text: String, message: String) async throws {
        let file = try InProcess.temporary("fates.json", text)
        let r = await Self.run(["--fates", file])
        #expect(r.status == 66)
        #expect(r.stderr.contains(message) && r.stderr.contains(file), "\(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1)
    }

    @Test func aRoundTripFatesFileRunsEndToEndAndTheSameSeedGivesTheSameReport() async throws {
        // The shape `trace --export-fates` writes: one roundTrip stream per resolver, RTT delays.
        var packets: [PacketFate] = []
        for i in 0..<4000 {
            let lost = i % 37 == 5 || (i % 500 >= 100 && i % 500 < 104)
            packets.append(PacketFate(sentMs: Double(i) * 4, size: 700, delivered: !lost, delayMs: lost ? nil : 80 + Double(i % 7)))
        }
        let trace = FateTrace(source: .init(kind: "trace", description: "lab capture"),
                              streams: [FateStream(resolver: "198.18.0.2:53", domain: "vpn.lab.test", direction: .roundTrip, packets: packets)])
        let file = try InProcess.temporary("fates.json", try ReportWriter.json(trace))
        let out1 = (file as NSString).deletingLastPathComponent + "/r1"
        let out2 = (file as NSString).deletingLastPathComponent + "/r2"
        let args = ["--fates", file, "--runs", "2", "--seed", "11", "-q"]
        let a = await Self.run(args + ["--out", out1])
        let b = await Self.run(args + ["--out", out2])
        #expect(a.status == 0 && b.status == 0, "\(a.stderr)")
        func load(_ dir: String) throws -> SimulateReport {
            try JSONDecoder().decode(SimulateReport.self, from: Data(contentsOf: URL(fileURLWithPath: dir + "/simulate.json")))
        }
        var ra = try load(out1)
        var rb = try load(out2)
        #expect(ra.input.sha256?.count == 64 && ra.input.streams.first?.data == "roundTrip")
        #expect(ra.isal.groupsVerified > 0 && ra.isal.mismatches == 0)
        for i in ra.levels.indices {
            ra.levels[i].isal.encodeMicrosPerGroup = nil
            ra.levels[i].isal.decodeMicrosPerGroup = nil
            rb.levels[i].isal.encodeMicrosPerGroup = nil
            rb.levels[i].isal.decodeMicrosPerGroup = nil
        }
        #expect(ra.levels == rb.levels && ra.recommendations == rb.recommendations && ra.input == rb.input)
        #expect(FileManager.default.fileExists(atPath: out1 + "/simulate.md"))
    }

    /// `--engine masterdnsvpn --mtu N`: FEC groups MasterDnsVPN's own frames, N payload bytes under an
    /// 11-byte header downstream (Go edition), and the report says where the sizes came from.
    @Test func engineFramesSizeTheSymbols() async throws {
        let dir = NSTemporaryDirectory() + "tp-sim-engine-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = await Self.run(["--model", "bernoulli:p=0.02", "--engine", "masterdnsvpn", "--mtu", "893", "--runs", "1",
                                "--opportunities", "3000", "--seed", "3", "--levels", "none,balanced", "--out", dir, "--quiet"])
        #expect(r.status == 0, "\(r.stderr)")
        let report = try JSONDecoder().decode(SimulateReport.self, from: Data(contentsOf: URL(fileURLWithPath: dir + "/simulate.json")))
        #expect(report.settings.symbolSize == 893 && report.settings.headerBytes == 11)
        #expect(report.settings.frameSource?.contains("masterdnsvpn-go download frames at MTU 893") == true)
        let up = await Self.run(["--model", "bernoulli:p=0.02", "--engine", "masterdnsvpn-python", "--mtu", "133", "--direction", "upload",
                                 "--runs", "1", "--opportunities", "2000", "--out", dir, "--quiet"])
        #expect(up.status == 0, "\(up.stderr)")
        let upReport = try JSONDecoder().decode(SimulateReport.self, from: Data(contentsOf: URL(fileURLWithPath: dir + "/simulate.json")))
        #expect(upReport.settings.symbolSize == 133 && upReport.settings.headerBytes == 13)
    }

    /// `report presets`: several paths' simulate runs side by side. Every figure in the table is the
    /// run's own (copied, not recomputed), each path keeps its recommendation, and a directory that
    /// holds no simulation is one error line and exit 66.
    @Test func presetsLaySeveralPathsSideBySide() async throws {
        let root = NSTemporaryDirectory() + "tp-presets-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let models = [("1% random", "bernoulli:p=0.01"), ("5% bursts of 3", "ge:p=0.017544,r=0.3333,h=1")]
        for (i, model) in models.enumerated() {
            let r = await Self.run(["--model", model.1, "--runs", "1", "--opportunities", "4000", "--seed", "\(20 + i)",
                                    "--verify-groups", "5", "--out", root + "/sim\(i)", "--quiet"])
            #expect(r.status == 0, "\(r.stderr)")
        }
        func report(_ arguments: [String]) async -> InProcess.Outcome {
            await Self.run(arguments, command: ["report", "presets"])
        }
        let r = await report(["\(models[0].0)=\(root)/sim0", "\(models[1].0)=\(root)/sim1", "--out", root + "/presets", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let comparison = try JSONDecoder().decode(PresetComparison.self, from: Data(r.stdout.utf8))
        #expect(comparison.paths.map(\.name) == models.map(\.0))
        #expect(comparison.levels == ["none", "conservative", "balanced", "aggressive"])
        for (i, path) in comparison.paths.enumerated() {
            let sim = try JSONDecoder().decode(SimulateReport.self, from: Data(contentsOf: URL(fileURLWithPath: "\(root)/sim\(i)/simulate.json")))
            #expect(path.seed == sim.input.seed && path.recommended == sim.recommendation?.level)
            #expect(path.rows.filter(\.recommended).map(\.level) == [sim.recommendation?.level].compactMap { $0 })
            for row in path.rows {
                let level = try #require(sim.levels.first { $0.level == row.level })
                #expect(row.longestStallMs == level.stallMs.max && row.residualLoss == level.residualLoss
                        && row.goodputBytesPerSecond == level.goodputBytesPerSecond && row.overhead == level.overhead)
            }
        }
        for file in ["presets.json", "presets.md", "presets.html"] {
            #expect(FileManager.default.fileExists(atPath: "\(root)/presets/\(file)"), "\(file)")
        }
        let md = try String(contentsOfFile: root + "/presets/presets.md", encoding: .utf8)
        #expect(md.contains("| level | 1% random | 5% bursts of 3 |") && md.contains("## longest stall ms"))
        // A run directory without a simulation: one line, exit 66.
        try FileManager.default.createDirectory(atPath: root + "/empty", withIntermediateDirectories: true)
        let bad = await report([root + "/sim0", root + "/empty"])
        #expect(bad.status == 66 && bad.stderr.split(separator: "\n").count == 1, "\(bad.status): \(bad.stderr)")
    }
}
