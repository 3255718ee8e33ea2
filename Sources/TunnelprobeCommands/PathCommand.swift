import Base
import Capture
import ArgumentParser
import DNSWire
import Foundation
import NIOCore
import PathMetrics
import ProbeClient
import ProbeProtocol
import Reports
import Synchronization
import Results

struct PathCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "path",
        abstract: "Measure loss (up and down apart), reordering, duplicates and delay through resolvers.",
        discussion: """
        Sends a paced stream of sequenced probes through each resolver to `tunnelprobe serve`; every
        answer carries the responder's receive history, so a lost probe is told apart as lost upstream
        (query) or downstream (response). Writes path.json and path.md into reports/<run-id>/.

        A tcp://, tls:// or https:// resolver gets the same paced probes over its transport \
        (pipelined, --connections-per-resolver). There the kernel retransmits and delivers in order, \
        so loss per direction, reordering and duplicates are not observable and not reported: path \
        reports RTT, offered and answered rates, timeouts (no answer within --tmax), wrong answers, \
        the first query's RTT (connection set-up included) and the connections set up and failed.

        --size U[:D]: U payload characters in each query name (at least 48, the meta block) and D payload
        bytes asked for in each response; `--size 100` means 100 and 100. The response always carries the
        receive history (up to 256 bytes) even when D is smaller.

        Exit codes: 0 measured, 64 bad flag, 66 unreadable key or resolver file, 69 responder absent
        (nothing answered within --absent-after) or cannot write the report, 130 interrupted (the report
        is written, marked incomplete).

        Example:
          tunnelprobe path --resolver 198.18.0.1 --domain t.example.com --key-file probe.key --rate 500 --duration 20
        """
    )

    @OptionGroup var resolverOptions: ResolverOptions

    @Option(help: "Domain served by `tunnelprobe serve`.")
    var domain: String

    @Option(help: "File with the pre-shared key (hexadecimal).")
    var keyFile: String

    @Option(help: "Probes per second to each resolver.")
    var rate: Double = 100

    @Option(help: "Probes per resolver (give --count or --duration).")
    var count: Int?

    @Option(help: "Seconds of sending per resolver (give --count or --duration).")
    var duration: Double?

    @Option(help: "U[:D]: query payload characters and response payload bytes (see below).")
    var size: String?

    @Option(help: "Record type of the responses: TXT, NULL, CNAME, MX, SRV, A, AAAA.")
    var recordType: String = "TXT"

    @Option(help: "Seconds after which a response counts as lost (RFC 7680 Tmax) and late.")
    var tmax: Double = 2.0

    @Option(help: "Seconds without any authenticated answer after which the responder counts as absent.")
    var absentAfter: Double = 5.0

    @Flag(help: "Client and responder read the same clock (as in the lab): report one-way delays.")
    var sharedClock = false

    @Option(help: "Seed for every random choice (stream ids, DNS ids); random when absent, always reported.")
    var seed: UInt64?

    @Option(help: "Report directory (default reports/<run-id>).")
    var out: String?

    @Option(help: "Write the per-direction fates (docs/FATES.md) to this file.")
    var exportFates: String?

    @Option(help: "Write one JSON line per probe (QNAME, DNS id, send time, responder view, arrivals) to this file.")
    var records: String?

    @Option(help: "Where this run is measured from, recorded in the report (default: host name).")
    var vantage: String?

    @Option(help: "Capture the probe traffic (UDP to and from the resolvers) into this pcap file.")
    var capture: String?

    @Option(help: "Device for --capture (default: any, every interface of this network namespace).")
    var captureDevice: String = "any"

    @OptionGroup var transportOptions: TransportOptions

    @OptionGroup var common: CommonOptions

    static func directory(of file: String) -> String {
        let d = (file as NSString).deletingLastPathComponent
        return d.isEmpty ? "." : d
    }

    /// Parses `U[:D]`.
    static func parseSize(_ text: String) -> (up: Int, down: Int)? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 1 || parts.count == 2, let up = Int(parts[0]) else { return nil }
        guard parts.count == 2 else { return (up, up) }
        guard let down = Int(parts[1]) else { return nil }
        return (up, down)
    }

    /// The flags that shape the probes, checked: every problem is one line and exit 64, before
    /// anything is sent.
    func probeShape() throws -> (zone: DNSName, type: DNSType, up: Int, down: Int) {
        guard rate.isFinite, rate > 0, rate <= 100_000 else { throw fail("--rate must be in (0, 100000] probes per second", .validationFailure) }
        guard (count == nil) != (duration == nil) else { throw fail("give exactly one of --count and --duration", .validationFailure) }
        if let count, count < 1 || count > 10_000_000 { throw fail("--count must be 1...10000000", .validationFailure) }
        if let duration, !(duration > 0 && duration <= 86_400) { throw fail("--duration must be in (0, 86400] seconds", .validationFailure) }
        guard let type = DNSType(name: recordType), DownloadLayout.supportedTypes.contains(type) else {
            throw fail("--record-type \(recordType): must be one of TXT, NULL, CNAME, MX, SRV, A, AAAA", .validationFailure)
        }
        guard tmax > 0, tmax <= 60 else { throw fail("--tmax must be in (0, 60] seconds", .validationFailure) }
        guard absentAfter > 0, absentAfter <= 600 else { throw fail("--absent-after must be in (0, 600] seconds", .validationFailure) }
        let zone: DNSName
        do { zone = try DNSName(domain) } catch { throw fail("--domain \(domain): \(error)", .validationFailure) }
        let (up, down) = try size.map { text in
            guard let s = Self.parseSize(text) else { throw fail("--size \(text): expected U or U:D (whole numbers)", .validationFailure) }
            return s
        } ?? (ProbeMeta.characterCount, 0)
        let maxUp = QNameCapacity.payloadCharacters(under: zone)
        guard up >= ProbeMeta.characterCount, up <= maxUp else {
            throw fail("--size: query payload must be \(ProbeMeta.characterCount)...\(maxUp) characters under \(zone)", .validationFailure)
        }
        let maxDown = DownloadLayout.maxPayload(type: type, zone: zone)
        guard down >= 0, down <= min(maxDown, 65_535) else {
            throw fail("--size: response payload must be 0...\(min(maxDown, 65_535)) bytes in \(type)", .validationFailure)
        }
        return (zone, type, up, down)
    }

    func run() async throws {
        // Every check prints one line and exits 64 (flags) or 66 (files), before anything is sent.
        let (zone, type, up, down) = try probeShape()
        // A path run streams to every resolver at --rate: a block gives at most 256 of them, and a
        // bad line stops the run rather than measuring fewer resolvers than the user listed.
        let list = try resolverOptions.list(cidrCap: 256, streams: true)
        if let issue = list.issues.first { throw fail("\(issue)", Exit.badInput) }
        guard !resolverOptions.isEmpty else { throw fail("give --resolver or --resolvers FILE", .validationFailure) }
        // An empty list is bad input, as for `scan` (exit 66, README "Exit codes").
        guard !list.resolvers.isEmpty else { throw fail("no usable resolver in the input", Exit.badInput) }
        let key = try loadProbeKey(keyFile)

        let seed = seed ?? UInt64.random(in: 0...UInt64.max)
        let perResolver = count ?? max(1, Int((rate * (duration ?? 0)).rounded()))
        // UDP resolvers get the sequenced streams; TCP, TLS and HTTPS ones the paced probes of StreamPath.
        let udpResolvers = list.resolvers.filter { list.targets[$0] == nil }
        let streamResolverTargets = list.resolvers.compactMap { list.targets[$0] }
        let settings = PathSettings(resolvers: udpResolvers, zone: zone, key: key, rate: rate, count: perResolver,
                                    uploadCharacters: up, downloadBytes: down, recordType: type,
                                    tmax: .nanoseconds(Int64(tmax * 1e9)), absentAfter: .nanoseconds(Int64(absentAfter * 1e9)),
                                    seed: seed)
        let run = CommandRun(kind: "path", out: out)
        let countersBefore = UDPCounters.read()
        if common.showsProgress {
            printErr("path: \(perResolver) probes to each of \(list.resolvers.count) resolver(s) at \(rate)/s ...")
        }
        let liveCapture = try startCapture(capture, device: captureDevice, endpoints: list.resolvers)
        let progress = common.showsProgress ? ElapsedLine("path", plannedSeconds: Double(perResolver) / rate + tmax) : nil
        var prober = Prober(engine: QueryEngine(seed: seed), key: key, timeout: .nanoseconds(Int64(tmax * 1e9)))
        let transports = try transportOptions.attach(to: &prober, list: list, seed: seed)
        let task = Task { [prober] in try await PathSession.run(settings, streams: streamResolverTargets, prober: prober) }
        let results: [PathStreamResult]
        let streamResults: [StreamPathResult]
        do { (results, streamResults) = try await run.measure(onSignal: { task.cancel() }) { try await task.value } } catch {
            progress?.finish()
            _ = liveCapture?.stop()
            await transports?.shutdown()
            await prober.engine.shutdown()
            throw fail("cannot run the path streams: \(error)", Exit.environment)
        }
        await transports?.shutdown()
        await prober.engine.shutdown()
        progress?.finish()
        if let liveCapture, let capture {
            let stats = liveCapture.stop()
            if !common.quiet {
                printErr("capture \(capture): \(stats.written) packets written, \(stats.droppedByKernel) dropped by the kernel")
            }
        }
        let finished = Date()
        let drops = countersBefore.flatMap { before in
            UDPCounters.read().map { $0.receiveBufferErrors - before.receiveBufferErrors }
        }

        let tmaxNanos = UInt64(tmax * 1e9)
        let analyses = results.map { PathExport.analysis($0, tmaxNanos: tmaxNanos, sharedClock: sharedClock) }
        let document = PathReport(
            run: run.info(seed: seed, vantage: vantage),
            settings: .init(domain: zone.description, rate: rate, count: perResolver, durationSeconds: duration,
                            uploadCharacters: up, downloadBytes: down, recordType: type.description, tmaxMs: tmax * 1000,
                            sharedClock: sharedClock),
            results: results, analyses: analyses, udpReceiveBufferErrors: drops,
            streamResolvers: streamResults.isEmpty ? nil : streamResults)
        let directory = run.directory
        try writeExports(results: results, analyses: analyses, settings: settings, runID: run.runID)
        let absent = !run.interruption.happened && results.allSatisfy(\.responderAbsent) && streamResults.allSatisfy { $0.answered == 0 }
        let json = try ReportWriter.json(document)
        try run.finish(json: json, files: [("path.json", json), ("path.md", document.markdown())],
                       summary: absent ? nil : document.summaryLines(directory: directory), common: common)
        try run.exitStatus(failed: false)
        guard absent else { return }
        if streamResults.isEmpty, let unsent = results.first(where: { $0.sendError != nil }), results.allSatisfy({ $0.sendError != nil }) {
            throw fail("cannot send to \(unsent.resolver): \(unsent.sendError ?? "")", Exit.environment)
        }
        if let failed = streamResults.first(where: { $0.lastConnectionFailure != nil }), let name = failed.lastConnectionFailure {
            throw fail("no answer over \(failed.transport) from \(failed.resolver): connection failure \(name); report: \(directory)/path.md", Exit.environment)
        }
        let window = min(absentAfter, finished.timeIntervalSince(run.started))
        throw fail("responder absent: no authenticated answer through any resolver in \(String(format: "%.1f", window)) s (is `tunnelprobe serve` running for \(zone) with the same key?); report: \(directory)/path.md", Exit.environment)
    }

    /// `--export-fates` and `--records`, when asked for; a file that cannot be written is one line and exit 69.
    func writeExports(results: [PathStreamResult], analyses: [PathAnalysis], settings: PathSettings, runID: String) throws {
        do {
            if let exportFates {
                let trace = PathExport.fates(results: results, analyses: analyses, domain: settings.zone.description, runID: runID,
                                             seed: settings.seed, sharedClock: sharedClock)
                // A fates file needs at least one packet with a known fate (docs/FATES.md, "Rules").
                if trace.streams.isEmpty {
                    printErr("tunnelprobe: warning: no probe has a known fate; \(exportFates) not written")
                } else {
                    try ReportWriter.write([((exportFates as NSString).lastPathComponent, try ReportWriter.json(trace))],
                                           to: Self.directory(of: exportFates))
                }
            }
            if let records {
                try ReportWriter.write([((records as NSString).lastPathComponent,
                                         PathExport.recordLines(results: results, analyses: analyses, settings: settings))],
                                       to: Self.directory(of: records))
            }
        } catch {
            throw fail("\(error)", Exit.environment)
        }
    }
}

extension PathReport {
    func summaryLines(directory: String) -> String {
        var lines: [String] = []
        for r in resolvers {
            func pct(_ p: Proportion) -> String { p.ratio.map { String(format: "%.2f %%", $0 * 100) } ?? "n/a" }
            let rtt = r.rttMs.p50.map { String(format: "%.1f ms", $0) } ?? "n/a"
            lines.append("\(r.resolver): loss up \(pct(r.loss.up)), down \(pct(r.loss.down)), round trip \(pct(r.loss.roundTrip)); RTT p50 \(rtt); \(r.counts.answered)/\(r.counts.sent) answered")
        }
        for r in streamResolvers ?? [] {
            let rtt = r.rttMs?.p50.map { String(format: "%.1f ms", $0) } ?? "n/a"
            let failure = r.lastConnectionFailure.map { "; connection failure: \($0)" } ?? ""
            lines.append("\(r.resolver): \(r.transport) RTT p50 \(rtt); \(r.answered)/\(r.sent) answered, \(r.timedOut) timed out, \(String(format: "%.1f", r.answeredRate)) answers/s; connections \(r.connections.opened) set up, \(r.connections.failed) failed\(failure)")
        }
        if !run.complete { lines.append("[incomplete: \(run.interruption ?? "interrupted")]") }
        return (lines + ["report: \(directory)/path.md"]).joined(separator: "\n")
    }
}
