import ArgumentParser
import Capture
import Foundation
import Reports
import Synchronization
import TraceAnalysis
import Results

struct TraceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trace",
        abstract: "Analyse DNS in captures: answered, lost, late, duplicated, reordered, RTT per resolver and tunnel domain.",
        discussion: """
        Reads pcap and pcapng files (tcpdump, Wireshark, `scan --capture`; pcapng with several sections
        and interfaces of different link types), matches each
        query with its response and writes trace.json and trace.md into reports/<run-id>/ (docs/TRACE.md).
        Files are read in the order given, as one capture. A cut or corrupt file is analysed up to the
        bad record; the report is then marked incomplete and the exit code is 66.

        Example:
          tunnelprobe trace hotspot.pcap --tmax 5 --export-fates hotspot.fates.json
        """
    )

    @Argument(help: "Capture files (pcap or pcapng).")
    var files: [String]

    @Option(help: "BPF filter applied while reading (libpcap syntax).")
    var filter: String?

    @Option(help: "Seconds a query waits for its response before it counts as lost (RFC 7680 Tmax).")
    var tmax: Double = 5

    @Option(help: "Seconds after Tmax in which a response still counts as late rather than unmatched.")
    var lateWindow: Double = 60

    @Option(name: .customLong("dns-port"), help: "UDP/TCP port carrying DNS (repeatable; default 53).")
    var dnsPorts: [Int] = []

    @Option(help: "Labels at least this long are encoded tunnel data (tunnel-domain grouping).")
    var encodedLabelMin: Int = 16

    @Option(help: "Write the per-query fates (docs/FATES.md) to this file.")
    var exportFates: String?

    @Option(help: "Recorded in the report (default: host name).")
    var vantage: String?

    @Option(help: "Report directory (default reports/<run-id>).")
    var out: String?

    @OptionGroup var common: CommonOptions

    func validate() throws {
        guard !files.isEmpty else { throw ValidationError("give at least one capture file") }
        guard tmax > 0, tmax <= 3600 else { throw ValidationError("--tmax must be in (0, 3600] seconds") }
        guard lateWindow >= 0, lateWindow <= 86_400 else { throw ValidationError("--late-window must be in [0, 86400] seconds") }
        guard dnsPorts.allSatisfy({ (1...65_535).contains($0) }) else { throw ValidationError("--dns-port must be 1...65535") }
        guard (1...63).contains(encodedLabelMin) else { throw ValidationError("--encoded-label-min must be 1...63") }
    }

    func run() throws {
        let run = CommandRun(kind: "trace", out: out)
        var options = TraceOptions()
        options.tmaxNanos = Int64(tmax * 1e9)
        options.lateWindowNanos = Int64(lateWindow * 1e9)
        if !dnsPorts.isEmpty { options.dnsPorts = Set(dnsPorts.map { UInt16($0) }) }
        options.filter = filter
        options.encodedLabelMin = encodedLabelMin
        options.recordFates = exportFates != nil
        var analyzer = TraceAnalyzer(options: options)

        var summaries: [TraceFile] = []
        var readError: String?
        let progress = common.showsProgress ? ElapsedLine("trace", plannedSeconds: nil) : nil
        let interruption = run.interruption
        try run.measure {
            for path in files {
                let summary: TraceFile
                do {
                    summary = try analyzer.read(path: path, stop: { interruption.happened })
                } catch {
                    throw fail("\(error)", Exit.badInput)
                }
                summaries.append(summary)
                if let reason = summary.error {
                    readError = "\(path): \(reason)" + (summary.errorOffset.map { " (at byte offset \($0))" } ?? "")
                    break
                }
                if interruption.happened { break }
            }
        }
        progress?.finish()
        analyzer.finish()

        let document = TraceReport(analyzer.result(files: summaries), run: run.info(seed: 0, vantage: vantage, failure: readError))
        if let exportFates {
            let hash = files.count == 1 ? FileDigest.sha256(path: files[0]) : nil
            let fates = analyzer.fateTrace(source: .init(
                kind: "trace", description: "trace of \(files.joined(separator: ", ")), Tmax \(tmax) s",
                file: files.count == 1 ? files[0] : nil, sha256: hash))
            if fates.streams.isEmpty {
                printErr("tunnelprobe: no queries in the capture, no fates written to \(exportFates)")
            } else {
                do {
                    try fates.validate(path: exportFates)
                    let json = try ReportWriter.json(fates)
                    try Data(json.utf8).write(to: URL(fileURLWithPath: exportFates))
                } catch {
                    throw fail("--export-fates \(exportFates): \(error)", Exit.environment)
                }
            }
        }
        let json = try ReportWriter.json(document)
        // trace.md is rendered with the run's index.html (`renderRun`), from the report in memory. The
        // capture stays on disk, so the report is written atomically but not synced (`recomputable`).
        try run.finish(json: json, files: [("trace.json", json)],
                       summary: document.summaryLine(directory: run.directory), common: common, recomputable: true,
                       written: ["trace.json": .trace(document)])
        try run.exitStatus(failed: false)
        if let readError { throw fail(readError, Exit.badInput) }
    }
}
