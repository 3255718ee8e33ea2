import Foundation
import Lab
import PathMetrics
import ProbeClient
import Reports
import Testing
import TestSupport
import Results

/// The issue's ground truth: what `path` reports per direction must agree, probe by probe, with what
/// the impairment relay says it did. The relay stands directly in front of `serve` on loopback, so no
/// resolver in between can absorb a duplicated query or retry one on its own.
@Suite(.serialized, .enabled(if: LabGate.measurement.runs, "needs the built binary on an idle machine"))
struct PathRelayAgreementTests {
    /// One line of the relay log (docs/IMPAIR.md), the fields this test reads.
    struct RelayLine: Decodable {
        var dir: String
        var qname: String?
        var action: String
        var copies: Int?
        var reorderGap: Int?
    }

    struct RelayFate {
        var upDropped = false
        var upCopies = 0
        /// One entry per response datagram the responder sent: copies delivered (0 when dropped).
        var down: [Int] = []
        /// Forwarded response datagrams the relay held back for reordering.
        var downHeld = 0
    }

    /// Starts a program in the background; the caller terminates it.
    static func start(_ argv: [String], stderr: String) throws -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: argv[0])
        p.arguments = Array(argv.dropFirst())
        _ = FileManager.default.createFile(atPath: stderr, contents: nil)
        p.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: stderr))
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        return p
    }

    static func stop(_ p: Process) {
        guard p.isRunning else { return }
        p.terminate()
        for _ in 0..<500 where p.isRunning { usleep(20_000) }
        if p.isRunning { kill(p.processIdentifier, SIGKILL) }
        p.waitUntilExit()
    }

    @Test(.timeLimit(.minutes(2)))
    func reportAgreesWithTheRelayLogProbeByProbe() throws {
        try LabGate.binary.check()
        let work = PathFixtures.outDirectory()
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let key = try PathFixtures.keyFile()
        defer { try? FileManager.default.removeItem(atPath: key) }
        let responderPort = LoopbackPort.unused()
        var relayPort = LoopbackPort.unused()
        while relayPort == responderPort { relayPort = LoopbackPort.unused() }
        let (p, r) = (0.02, 0.25)

        let serve = try Self.start([TestEnvironment.binary, "serve", "--domain", "probe.test", "--key-file", key,
                                    "--listen", "127.0.0.1:\(responderPort)", "--rate-limit", "0"],
                                   stderr: work + "/serve.err")
        defer { Self.stop(serve) }
        let relay = try Self.start([TestEnvironment.binary, "impair", "--listen", "127.0.0.1:\(relayPort)",
                                    "--upstream", "127.0.0.1:\(responderPort)", "--seed", "42", "--log", work + "/relay.jsonl",
                                    "--up-ge", "p=\(p),r=\(r)", "--up-duplicate", "0.01",
                                    "--down-loss", "0.03", "--down-duplicate", "0.02", "--down-reorder", "0.01:2"],
                                   stderr: work + "/relay.err")
        defer { Self.stop(relay) }
        try #require(PathFixtures.waitForLine("serving probe.test on 127.0.0.1:\(responderPort)", in: work + "/serve.err", of: serve),
                     "serve did not start: \((try? String(contentsOfFile: work + "/serve.err", encoding: .utf8)) ?? "")")
        try #require(PathFixtures.waitForLine("impair: relaying 127.0.0.1:\(relayPort)", in: work + "/relay.err", of: relay),
                     "impair did not start: \((try? String(contentsOfFile: work + "/relay.err", encoding: .utf8)) ?? "")")

        let path = Process()
        path.executableURL = URL(fileURLWithPath: TestEnvironment.binary)
        path.arguments = ["path", "--resolver", "127.0.0.1:\(relayPort)", "--domain", "probe.test", "--key-file", key,
                          "--rate", "2000", "--count", "20000", "--tmax", "1", "--seed", "7", "--quiet",
                          "--records", work + "/records.jsonl", "--out", work + "/report"]
        path.standardOutput = FileHandle.nullDevice
        path.standardError = FileHandle.nullDevice
        try path.run()
        path.waitUntilExit()
        Self.stop(relay)
        #expect(path.terminationStatus == 0 || path.terminationStatus == 1, "path exited \(path.terminationStatus)")

        // What the relay did to each probe name.
        var relayFates: [String: RelayFate] = [:]
        let decoder = JSONDecoder()
        let log = try String(contentsOfFile: work + "/relay.jsonl", encoding: .utf8)
        for line in log.split(separator: "\n") {
            guard let entry = try? decoder.decode(RelayLine.self, from: Data(line.utf8)), let qname = entry.qname?.lowercased() else { continue }
            var fate = relayFates[qname, default: RelayFate()]
            if entry.dir == "up" {
                fate.upDropped = entry.action == "drop"
                fate.upCopies = entry.action == "forward" ? (entry.copies ?? 1) : 0
            } else {
                fate.down.append(entry.action == "forward" ? (entry.copies ?? 1) : 0)
                if (entry.reorderGap ?? 0) > 0, entry.action == "forward" { fate.downHeld += 1 }
            }
            relayFates[qname] = fate
        }

        // What path says about each probe.
        let records = try String(contentsOfFile: work + "/records.jsonl", encoding: .utf8).split(separator: "\n")
            .map { try decoder.decode(PathExport.RecordLine.self, from: Data($0.utf8)) }
        #expect(records.count == 20_000)
        var disagreements: [String] = []
        var relayUpLost = 0, relayDownLost = 0, relayUpDuplicates = 0, relayDownDuplicates = 0, relayHeld = 0, unknown = 0
        for record in records {
            guard let fate = relayFates[record.qname.lowercased()] else {
                disagreements.append("seq \(record.seq): not in the relay log")
                continue
            }
            let delivered = fate.down.reduce(0, +)
            let relayOutcome: PathFate = fate.upDropped ? .lostUp : (delivered == 0 ? .lostDown : .delivered)
            if fate.upDropped { relayUpLost += 1 } else if delivered == 0 { relayDownLost += 1 }
            relayUpDuplicates += max(0, fate.upCopies - 1)
            relayDownDuplicates += max(0, delivered - (delivered > 0 ? 1 : 0))
            // The client's first copy comes out of order only when every copy that was forwarded was
            // held: a copy that was not held leaves at once and arrives in order (RFC 4737 counts
            // the first arrival; later ones are duplicates).
            let forwarded = fate.down.filter { $0 > 0 }.count
            if forwarded > 0, fate.downHeld == forwarded { relayHeld += 1 }
            if record.fate == .lostUnknown { unknown += 1; continue }
            if record.fate != relayOutcome {
                disagreements.append("seq \(record.seq): path \(record.fate), relay \(relayOutcome)")
            }
            if !fate.upDropped, record.responderCopies != fate.upCopies {
                disagreements.append("seq \(record.seq): responder saw \(record.responderCopies ?? 0) copies, relay sent \(fate.upCopies)")
            }
            if record.arrivalsNs.count != delivered {
                disagreements.append("seq \(record.seq): client got \(record.arrivalsNs.count) responses, relay delivered \(delivered)")
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.count) disagreements, first: \(disagreements.prefix(5))")
        #expect(unknown <= records.count / 200, "\(unknown) probes without a known direction")

        // The report's counts are the same numbers.
        let report = try decoder.decode(PathReport.self, from: Data(contentsOf: URL(fileURLWithPath: work + "/report/path.json")))
        let row = try #require(report.resolvers.first)
        #expect(row.counts.lostUp == relayUpLost)
        #expect(row.counts.lostDown == relayDownLost)
        #expect(row.counts.duplicatesUp == relayUpDuplicates)
        #expect(row.counts.duplicatesDown == relayDownDuplicates)
        #expect(row.reordering.down.reordered == relayHeld, "down reordered \(row.reordering.down.reordered), relay held \(relayHeld)")

        // The Gilbert fit of the upstream loss trace recovers the relay's p and r within 20 %.
        let up = try #require(row.gilbertByDirection.up.twoState, "\(row.gilbertByDirection.up.twoStateReason ?? "")")
        #expect(abs(up.p - p) / p < 0.2, "fitted p \(up.p), configured \(p)")
        #expect(abs(up.r - r) / r < 0.2, "fitted r \(up.r), configured \(r)")
    }
}
