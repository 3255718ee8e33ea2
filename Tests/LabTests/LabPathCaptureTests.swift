import Foundation
@testable import Lab
import PathMetrics
import ProbeClient
import Reports
import Testing
import TestSupport
import Results

/// `path` through the lab's real unbound behind the impairment relay: upstream-only and downstream-only
/// loss are told apart exactly as the relay did them, and the `--capture` file holds, by tcpdump's
/// count, exactly the datagrams the report says were sent and received.
@Suite(.serialized, .enabled(if: LabGate.labWithBinary.runs, "\(LabGate.labWithBinary.missing ?? "lab tests can run")"))
struct LabPathCaptureTests {
    struct RelayLine: Decodable {
        var dir: String
        var qname: String?
        var action: String
    }

    func runPath(lossFlags: [String]) async throws -> (report: PathReport, records: [PathExport.RecordLine], relay: [RelayLine], pcapQueries: Int, pcapResponses: Int) {
        var config = LabFixture.config(qnameMinimisation: false, serverCommand: [TestEnvironment.binary, "serve", "--rate-limit", "0"],
                                       readiness: .udpListening)
        config.impairCommand = [TestEnvironment.binary, "impair", "--seed", "5"] + lossFlags
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("tp-lpc-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        var out: (PathReport, [PathExport.RecordLine], [RelayLine], Int, Int)?
        try await LabFixture.withLab(config) { lab in
            let resolver = try #require(lab.impairedResolverAddress)
            let argv = Lab.namespaceCommand(name: lab.name, role: .client, command: [
                TestEnvironment.binary, "path", "--resolver", resolver, "--domain", lab.domain, "--key-file", lab.keyFile,
                "--rate", "500", "--count", "3000", "--tmax", "2", "--seed", "3", "--quiet",
                "--capture", work + "/path.pcap", "--records", work + "/records.jsonl", "--out", work + "/report"])
            let run = try LabFixture.shell(argv)
            #expect(run.status == 0 || run.status == 1, "path exited \(run.status)")
            // The relay flushes its log every second.
            try await Task.sleep(for: .milliseconds(1500))
            let decoder = JSONDecoder()
            let relay = try String(contentsOfFile: try #require(lab.impairLog), encoding: .utf8).split(separator: "\n")
                .compactMap { try? decoder.decode(RelayLine.self, from: Data($0.utf8)) }
            let report = try decoder.decode(PathReport.self, from: Data(contentsOf: URL(fileURLWithPath: work + "/report/path.json")))
            let records = try String(contentsOfFile: work + "/records.jsonl", encoding: .utf8).split(separator: "\n")
                .map { try decoder.decode(PathExport.RecordLine.self, from: Data($0.utf8)) }
            // The relay listens in the client namespace, so a query's source address is the resolver's
            // too (a local destination): tell the directions apart by port.
            let queries = try LabFixture.shell(["tcpdump", "-nn", "-r", work + "/path.pcap", "udp", "dst", "port", "53"])
            let responses = try LabFixture.shell(["tcpdump", "-nn", "-r", work + "/path.pcap", "udp", "src", "port", "53"])
            #expect(queries.status == 0 && responses.status == 0, "tcpdump -r failed")
            out = (report, records, relay,
                   queries.output.split(separator: "\n").count, responses.output.split(separator: "\n").count)
        }
        return try #require(out)
    }

    /// Per probe: lost up exactly when the relay dropped its query, lost down exactly when it dropped
    /// every response; and the capture counts match the report.
    func check(_ r: (report: PathReport, records: [PathExport.RecordLine], relay: [RelayLine], pcapQueries: Int, pcapResponses: Int),
               expectUp: Bool, expectDown: Bool) throws {
        var upDropped = Set<String>(), downForwarded = Set<String>(), downDropped = Set<String>()
        for line in r.relay {
            guard let q = line.qname?.lowercased() else { continue }
            if line.dir == "up", line.action == "drop" { upDropped.insert(q) }
            if line.dir == "down" { if line.action == "drop" { downDropped.insert(q) } else { downForwarded.insert(q) } }
        }
        var wrong: [String] = []
        for rec in r.records {
            let q = rec.qname.lowercased()
            let relaySays: PathFate = upDropped.contains(q) ? .lostUp
                : (downDropped.contains(q) && !downForwarded.contains(q) ? .lostDown : .delivered)
            if rec.fate != relaySays { wrong.append("seq \(rec.seq): path \(rec.fate), relay \(relaySays)") }
        }
        #expect(wrong.isEmpty, "\(wrong.count) disagreements: \(wrong.prefix(5))")
        let row = try #require(r.report.resolvers.first)
        #expect((row.counts.lostUp > 0) == expectUp && (row.counts.lostDown > 0) == expectDown,
                "lost up \(row.counts.lostUp), down \(row.counts.lostDown)")
        #expect(r.pcapQueries == row.stream.datagramsSent, "capture has \(r.pcapQueries) queries, report sent \(row.stream.datagramsSent ?? -1)")
        #expect(r.pcapResponses == row.stream.datagramsReceived, "capture has \(r.pcapResponses) responses, report received \(row.stream.datagramsReceived ?? -1)")
    }

    @Test(.timeLimit(.minutes(2)))
    func upstreamOnlyLossIsUpstream() async throws {
        try LabGate.labWithBinary.check()
        try check(try await runPath(lossFlags: ["--up-loss", "0.05"]), expectUp: true, expectDown: false)
    }

    @Test(.timeLimit(.minutes(2)))
    func downstreamOnlyLossIsDownstream() async throws {
        try LabGate.labWithBinary.check()
        try check(try await runPath(lossFlags: ["--down-loss", "0.05"]), expectUp: false, expectDown: true)
    }
}
