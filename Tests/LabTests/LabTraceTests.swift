import Foundation
import Lab
import Reports
import Results
import Testing
import TestSupport

/// `trace` against tshark's DNS analysis on captures made in the lab: tcpdump in the client namespace
/// during a scan, and the scan's own `--capture` file.
@Suite(.serialized, .enabled(if: LabGate.labWithBinary.runs, "lab needs root, unbound, iproute2, tcpdump, tshark and a built binary"))
struct LabTraceTests {
    static func temporary(_ suffix: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("tp-trace-\(UUID().uuidString)\(suffix)").path
    }

    /// What tshark's DNS dissector says about a capture (fields dns.id, dns.flags.response,
    /// dns.response_in, dns.response_to, dns.time, dns.retransmission).
    struct TsharkView {
        var queries = 0
        var answered = 0
        var unanswered = 0
        var duplicates = 0
        var rttsMs: [Double] = []
    }

    static func tshark(_ path: String) throws -> TsharkView {
        // -2: two passes, so that a query learns the frame of its response (dns.response_in).
        let r = try run(["tshark", "-2", "-n", "-r", path, "-d", "udp.port==5300,dns", "-Y", "dns", "-T", "fields", "-E", "separator=|",
                         "-e", "dns.flags.response", "-e", "dns.response_in", "-e", "dns.response_to",
                         "-e", "dns.time", "-e", "dns.retransmission"])
        #expect(r.status == 0, "tshark: \(r.stderr)")
        var view = TsharkView()
        var answeredQueries = Set<String>()
        for line in r.stdout.split(separator: "\n") {
            let f = line.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            guard f.count >= 5 else { continue }
            let retransmission = f[4] == "1" || f[4] == "True"
            if f[0] == "0" || f[0] == "False" {
                guard !retransmission else { continue }
                view.queries += 1
                if f[1].isEmpty { view.unanswered += 1 }
            } else if !f[2].isEmpty {
                if retransmission || answeredQueries.contains(f[2]) {
                    view.duplicates += 1
                } else {
                    answeredQueries.insert(f[2])
                    if let s = Double(f[3]) { view.rttsMs.append(s * 1000) }
                }
            }
        }
        view.answered = answeredQueries.count
        return view
    }

    static func trace(_ files: [String]) throws -> TraceReport {
        let out = temporary("-report")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let r = try run([TestEnvironment.binary, "trace", "--tmax", "60", "--dns-port", "53", "--dns-port", "5300",
                         "--out", out, "--quiet"] + files)
        #expect(r.status == 0, "trace exited \(r.status): \(r.stderr)")
        return try JSONDecoder().decode(TraceReport.self, from: Data(contentsOf: URL(fileURLWithPath: out + "/trace.json")))
    }

    /// Nearest-rank percentile of the tshark RTTs, to compare with the HdrHistogram's (0.1% precision).
    static func percentile(_ values: [Double], _ p: Double) -> Double {
        let sorted = values.sorted()
        let rank = max(0, Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1)
        return sorted[min(rank, sorted.count - 1)]
    }

    static func compare(_ report: TraceReport, _ view: TsharkView) {
        #expect(report.totals.queries == view.queries, "queries: trace \(report.totals.queries), tshark \(view.queries)")
        #expect(report.totals.answered + report.totals.late == view.answered)
        #expect(report.totals.neverAnswered == view.unanswered)
        #expect(report.totals.duplicates == view.duplicates)
        #expect(report.totals.rttMs.samples == view.rttsMs.count)
        for (p, mine) in [(50.0, report.totals.rttMs.p50), (99.0, report.totals.rttMs.p99)] {
            let theirs = percentile(view.rttsMs, p)
            let ours = mine ?? -1
            // HdrHistogram with three significant digits: within 0.1% (plus the 1 us resolution).
            #expect(abs(ours - theirs) <= theirs * 0.002 + 0.002, "p\(p): trace \(ours) ms, tshark \(theirs) ms")
        }
    }

    @Test(.timeLimit(.minutes(3))) func traceAgreesWithTsharkOnTcpdumpAndScanCaptures() async throws {
        // No UDP limit on the resolver: the large download probes come back in IP fragments.
        try await withLab(limit: nil) { lab in
            let dumpFile = Self.temporary(".pcap"), probeFile = Self.temporary("-scan.pcap")
            defer { unlink(dumpFile); unlink(probeFile) }
            let tcpdump = Process()
            tcpdump.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            tcpdump.arguments = Lab.namespaceCommand(name: lab.name, role: .client, command: [
                "tcpdump", "-i", "any", "-U", "-w", dumpFile, "udp",
            ])
            tcpdump.standardError = FileHandle.nullDevice
            try tcpdump.run()
            // tcpdump creates the file once its filter is in place.
            for _ in 0..<100 where !FileManager.default.fileExists(atPath: dumpFile) { try await Task.sleep(for: .milliseconds(50)) }
            try await Task.sleep(for: .milliseconds(200))
            #expect(FileManager.default.fileExists(atPath: dumpFile))
            // A working resolver and a port where nothing answers: answered and unanswered queries both.
            // Ten confirmation probes per direction: the size searches alone now take about a dozen
            // queries (the scan no longer sends sizes an honouring responder would truncate).
            _ = try scan(lab, ["--resolver", lab.resolverAddress, "--resolver", "\(lab.resolverAddress):5300", "--timeout", "1",
                               "--confirm", "10", "--capture", probeFile])
            try await Task.sleep(for: .milliseconds(300))
            // SIGKILL, not SIGINT: the child inherits the test thread's signal mask, which blocks SIGINT
            // and SIGTERM. With -U every packet is already flushed to the file, so nothing is lost.
            kill(tcpdump.processIdentifier, SIGKILL)
            tcpdump.waitUntilExit()

            let fromDump = try Self.trace([dumpFile])
            let tsharkDump = try Self.tshark(dumpFile)
            #expect(tsharkDump.queries > 20)
            #expect(tsharkDump.unanswered > 0)
            #expect(fromDump.schema == TraceResult.schemaName)
            #expect(fromDump.packets.undecoded.isEmpty, "\(fromDump.packets.undecoded)")
            Self.compare(fromDump, tsharkDump)
            let silent = try #require(fromDump.resolvers.first { $0.resolver == "\(lab.resolverAddress):5300" })
            #expect(silent.answered == 0 && silent.lost == silent.queries && silent.queries > 0)

            // The scan's own capture: tcpdump reads it, and trace and tshark agree on it too.
            let read = try run(["tcpdump", "-nn", "-r", probeFile])
            #expect(read.status == 0, "tcpdump -r: \(read.stderr)")
            let fromProbe = try Self.trace([probeFile])
            #expect(read.stdout.split(separator: "\n").count == fromProbe.packets.total)
            #expect(fromProbe.totals.queries == fromDump.totals.queries)
            Self.compare(fromProbe, try Self.tshark(probeFile))
        }
    }
}
