import Base
import ArgumentParser
import Capture
import DNSWire
import EngineModels
import Foundation
import NIOCore
import ProbeClient
import ProbeProtocol
import Reports
import Synchronization

struct ScanCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scan",
        abstract: "Find the resolver-domain pairs that carry a tunnel, and their upload and download MTU.",
        discussion: """
        Stages, cheapest first; a pair is dropped at its first failure with the reason kept:
        reachability -> honest answers -> upload MTU -> download MTU -> confirmation.
        Each MTU search tries the largest size first, then the smallest, then (downloads in TXT or \
        NULL) the sizes whose answers would fill 1232 and 512 bytes, then bisects; every size is \
        decided by probes (--attempts for losses), so a guess saves queries but never sets a result.
        A SERVFAIL that a control probe shares (the resolver answering from its failure cache) is \
        waited out, not taken as a size limit. Each pair names what bound its download size: TC \
        (the resolver's limit toward the client), upstream EDNS (the size the resolver advertises \
        upstream, when the responder honours it: `serve --edns honor`, or `scan --edns honor`), the \
        record type, loss, or another failure. `--edns ignore` asks the responder to answer whole, as \
        MasterDnsVPN's server does, whatever the resolver advertises.
        A pair whose confirmation probes were lost beyond --max-loss (loss with its Wilson 95 % \
        interval, RFC 7680) is flagged and left out of the exports and the synced MTU.
        Every pair is also given in the units of each engine named by --engine (default: all): \
        MasterDnsVPN's MIN/MAX_UPLOAD_MTU and MIN/MAX_DOWNLOAD_MTU (Go and Python editions), dnstt's \
        server -mtu, slipstream's usability, iodine's -M and -m, computed by the engine's model \
        (docs/ENGINES.md) from the measured name length and response size, with the synced values \
        and the files each engine reads under exports/<engine>/.
        Writes scan.json, scan.md and the engine exports into reports/<run-id>/.
        With --e2e (root), the real engine (verify's: iodine or --e2e-engine command) is then started \
        for each of the best --e2e-count usable pairs, pinned to that one resolver: its handshake \
        time, the first data through the tunnel (--e2e-url) and a short bulk download's goodput \
        (--e2e-bulk-url, RFC 2647 3.17) go into the report, ranked; a pair that passed the probes but \
        fails end to end is shown so, with the engine's own words.

        Example:
          tunnelprobe scan --resolvers resolvers.txt --domain t.example.com --key-file probe.key
        """
    )

    @OptionGroup var resolverOptions: ResolverOptions

    @Option(name: .customLong("domain"), help: "Tunnel domain served by `tunnelprobe serve` (repeatable).")
    var domains: [String] = []

    @Option(help: "File with the pre-shared key (hexadecimal).")
    var keyFile: String

    @Option(help: "Upload label encoding: base32, base36, base64url, base128.")
    var encoding: String = "base32"

    @Option(help: "Engines to give figures for, comma-separated: masterdnsvpn (the Go edition), masterdnsvpn-python, dnstt, slipstream, iodine, or all.")
    var engine: String = "all"

    @Option(help: "Record types for download probes, comma-separated: TXT, NULL, CNAME, MX, SRV, A, AAAA (default: the types the engines answer with, TXT and for iodine NULL). The first is the pair's `download`.")
    var recordType: String?

    @Option(help: "Seconds to wait for each answer.")
    var timeout: Double = 2.0

    @Option(help: "Tries per size when a probe times out or gets SERVFAIL.")
    var attempts: Int = 2

    @Option(help: "Pairs scanned at once.")
    var concurrency: Int = 256

    @Option(help: "Queries per second sent to any one resolver (0 = no pacing).")
    var perResolverQps: Double = 100

    @Flag(help: "Send up to --concurrency queries at once whatever is lost, without the scan-wide congestion window (AIMD on the queries in flight: it halves when answers that should come are lost, so the scan's own load is never read as a size limit).")
    var noCongestionControl = false

    @Option(help: "Confirmation probes per direction at the chosen sizes.")
    var confirm: Int = 3

    @Option(help: "Largest confirmation loss ratio (0-1) of a pair the exports and the synced MTU take; above it the pair is flagged and left out (default 0.2: with 3 confirmation probes per direction one lost probe passes, two do not).")
    var maxLoss: Double = ScanConfiguration.defaultMaxLoss

    @Option(help: "What download probes ask of the responder: server (as `serve --edns` is set), honor (truncate at the EDNS size the resolver advertises upstream, as authoritative servers and dnstt do) or ignore (answer whole, as MasterDnsVPN's server does).")
    var edns: String = "server"

    @Option(help: "Stop once this many pairs are accepted.")
    var minValid: Int?

    @Option(help: "Largest upload tried, in payload characters (default: all the name can hold).")
    var uploadMaxChars: Int?

    @Option(help: "Smallest download payload tried, in bytes.")
    var downloadMin: Int = 20

    @Option(help: "Largest download payload tried, in bytes.")
    var downloadMax: Int = 4096

    @Option(help: "Largest number of addresses taken from one CIDR block.")
    var cidrCap: Int = ResolverList.defaultCIDRCap

    @Option(help: "Seed for every random choice (order, DNS ids); random when absent, always reported.")
    var seed: UInt64?

    @Option(help: "Report directory (default reports/<run-id>).")
    var out: String?

    @Option(help: "Where this scan runs from, recorded in the report (default: host name).")
    var vantage: String?

    @Option(help: "Capture the probe traffic (UDP to and from the scanned resolvers) into this pcap file.")
    var capture: String?

    @Option(help: "Device for --capture (default: any, every interface of this network namespace).")
    var captureDevice: String = "any"

    @OptionGroup var endToEnd: EndToEndOptions

    @OptionGroup var common: CommonOptions

    func validate() throws {
        guard !domains.isEmpty else { throw ValidationError("give at least one --domain") }
        guard !resolverOptions.isEmpty else {
            throw ValidationError("give --resolver or --resolvers FILE")
        }
        guard LabelEncoding(rawValue: encoding) != nil else {
            throw ValidationError("--encoding must be one of base32, base36, base64url, base128")
        }
        _ = try engines()
        _ = try recordTypes()
        guard timeout > 0, timeout <= 60 else { throw ValidationError("--timeout must be in (0, 60] seconds") }
        guard (1...10).contains(attempts) else { throw ValidationError("--attempts must be 1...10") }
        guard (1...10_000).contains(concurrency) else { throw ValidationError("--concurrency must be 1...10000") }
        guard perResolverQps >= 0 else { throw ValidationError("--per-resolver-qps must be 0 or more") }
        guard (0...100).contains(confirm) else { throw ValidationError("--confirm must be 0...100") }
        guard 1 <= downloadMin, downloadMin <= downloadMax, downloadMax <= 65_000 else {
            throw ValidationError("--download-min and --download-max must satisfy 1 <= min <= max <= 65000")
        }
        if let m = minValid, m < 1 { throw ValidationError("--min-valid must be 1 or more") }
        if let u = uploadMaxChars, u < ProbeMeta.characterCount {
            throw ValidationError("--upload-max-chars must be at least \(ProbeMeta.characterCount) (the probe's meta block)")
        }
        guard Self.ednsRequests[edns] != nil else { throw ValidationError("--edns must be server, honor or ignore") }
        guard (0...1).contains(maxLoss) else { throw ValidationError("--max-loss must be in 0...1") }
    }

    func run() async throws {
        let logger = common.logger("tunnelprobe.scan")
        let run = CommandRun(kind: "scan", out: out)
        let key: ProbeKey
        do { key = try ProbeKey.load(path: keyFile) } catch { throw fail("\(error)", Exit.badInput) }
        var zones: [DNSName] = []
        for d in domains {
            do { zones.append(try DNSName(d)) } catch { throw fail("--domain \(d): \(error)", .validationFailure) }
        }
        let list = try resolverOptions.list(cidrCap: cidrCap)
        for issue in list.issues { logger.warning("\(issue)") }
        guard !list.resolvers.isEmpty else { throw fail("no usable resolver in the input", Exit.badInput) }

        let seed = seed ?? UInt64.random(in: 0...UInt64.max)
        let endToEndConfiguration = try await endToEnd.configuration(seed: seed)
        var configuration = ScanConfiguration(resolvers: list.resolvers, domains: zones)
        configuration.encoding = LabelEncoding(rawValue: encoding)!
        let chosenEngines = try engines()
        configuration.recordTypes = try recordTypes()
        configuration.timeout = .milliseconds(Int64(timeout * 1000))
        configuration.attempts = attempts
        configuration.concurrency = concurrency
        configuration.perResolverQPS = perResolverQps
        configuration.confirmProbes = confirm
        configuration.minValid = minValid
        configuration.uploadCharacters = ProbeMeta.characterCount...(uploadMaxChars ?? QNameCapacity.maxNameCharacters)
        configuration.downloadBytes = downloadMin...downloadMax
        configuration.seed = seed
        configuration.maxLoss = maxLoss
        configuration.congestionControl = !noCongestionControl

        let engine = QueryEngine(seed: seed)
        var prober = Prober(engine: engine, key: key, encoding: configuration.encoding, timeout: configuration.timeout,
                            pacer: perResolverQps > 0 ? Pacer(queriesPerSecond: perResolverQps) : nil)
        prober.ednsRequest = Self.ednsRequests[edns] ?? .server
        let scanner = Scanner(configuration: configuration, prober: prober)
        var liveCapture: LiveCapture?
        if let capture {
            let live = ProbeCapture.live(endpoints: list.resolvers, device: captureDevice, writeTo: capture)
            do { try live.start() } catch {
                await engine.shutdown()
                throw fail("--capture: \(error)", error.code == .permissionDenied ? Exit.noPermission : Exit.environment)
            }
            liveCapture = live
        }
        let progress = common.showsProgress ? ProgressLine() : nil
        var report: (@Sendable (ScanProgress) -> Void)?
        if let progress { report = { progress.update($0) } }
        let onProgress = report
        let task = Task { await scanner.run(progress: onProgress) }
        let result = await run.measure(onSignal: { task.cancel() }) { await task.value }
        progress?.finish()
        await engine.shutdown()
        if let liveCapture, let capture {
            let stats = liveCapture.stop()
            logger.notice("capture \(capture): \(stats.written) packets written, \(stats.droppedByKernel) dropped by the kernel")
        }

        var info = run.info(seed: seed, vantage: vantage)
        if result.interrupted { info.complete = false }
        var document = ScanReport.build(run: info, configuration: configuration, list: list, result: result,
                                        duration: Date().timeIntervalSince(run.started), engines: chosenEngines)
        document.settings.edns = edns
        if let endToEndConfiguration, !result.interrupted {
            document.endToEnd = await endToEnd.run(endToEndConfiguration, pairs: result.pairs, logger: logger)
        }
        let json = try ReportWriter.json(document)
        try run.finish(json: json, files: [("scan.json", json), ("scan.md", document.markdown())] + document.engineExportFiles(),
                       summary: document.summaryLine(directory: run.directory), common: common)
        try run.exitStatus(failed: document.summary.accepted == 0)
    }
}

extension ScanCommand {
    /// The engines `--engine` names, in order (`all`: every model).
    func engines() throws -> [Engine] {
        if engine.trimmingCharacters(in: .whitespaces).lowercased() == "all" { return Engine.allCases }
        let parsed = EngineCatalog.parse(engine)
        guard parsed.unknown.isEmpty, !parsed.engines.isEmpty else {
            throw ValidationError("--engine: unknown \(parsed.unknown.joined(separator: ", ")); use masterdnsvpn, masterdnsvpn-python, dnstt, slipstream, iodine or all")
        }
        return parsed.engines
    }

    /// `--record-type`, or the record types the engines answer with (TXT first).
    func recordTypes() throws -> [DNSType] {
        guard let recordType else {
            let wanted = Set(try engines().map { EngineCatalog.model(for: $0).downloadRecordType.rawValue })
            let ordered = ["TXT"] + wanted.subtracting(["TXT"]).sorted()
            return ordered.compactMap { DNSType(name: $0) }.filter { DownloadLayout.supportedTypes.contains($0) }
        }
        var types: [DNSType] = []
        for name in recordType.split(separator: ",") {
            guard let t = DNSType(name: name.trimmingCharacters(in: .whitespaces)), DownloadLayout.supportedTypes.contains(t) else {
                throw ValidationError("--record-type \(name): must be one of TXT, NULL, CNAME, MX, SRV, A, AAAA")
            }
            if !types.contains(t) { types.append(t) }
        }
        guard !types.isEmpty else { throw ValidationError("--record-type: give at least one type") }
        return types
    }

    static let ednsRequests: [String: ProbeMeta.EDNSRequest] = ["server": .server, "honor": .honor, "ignore": .ignore]
}

extension ScanReport {
    static func build(run: RunInfo, configuration c: ScanConfiguration, list: ResolverList, result: ScanResult,
                      duration: Double, engines: [Engine]) -> ScanReport {
        let settings = ScanSettings(
            domains: c.domains.map(\.description), encoding: c.encoding.rawValue, recordType: c.recordType.description,
            timeoutMs: Int(c.timeout.nanoseconds / 1_000_000), attempts: c.attempts, concurrency: c.concurrency,
            perResolverQPS: c.perResolverQPS, confirmProbes: c.confirmProbes, minValid: c.minValid,
            uploadCharacters: .init(min: c.uploadCharacters.lowerBound, max: c.uploadCharacters.upperBound),
            downloadBytes: .init(min: c.downloadBytes.lowerBound, max: c.downloadBytes.upperBound),
            ednsSize: 4096, maxLoss: c.maxLoss)
        let summary = Summary(of: result.pairs, notTested: result.notTested, queries: result.queries, durationSeconds: duration)
        var report = ScanReport(run: run, settings: settings,
                                input: InputSummary(resolvers: c.resolvers.count, listIssues: list.issues.map(\.description)),
                                pairs: result.pairs, synced: SyncedMTU.synced(result.pairs),
                                optimized: SyncedMTU.optimize(result.pairs), summary: summary,
                                engines: EngineScan.all(engines, pairs: result.pairs))
        report.settings.recordTypes = c.recordTypes.map(\.description)
        report.settings.engines = engines.map(\.rawValue)
        report.congestion = result.congestion
        return report
    }

    func summaryLine(directory: String) -> String {
        let accepted = "\(summary.accepted) of \(summary.pairs) pairs accepted"
        var s = summary.accepted > 0 ? Style.ok(accepted) : Style.bad(accepted)
        if let up = synced.upload, let down = synced.download {
            s += "; synced MTU upload \(up) B (QNAME \(synced.uploadQnameChars ?? 0) chars), download \(down) B (response \(synced.downloadResponseSize ?? 0) B)"
        }
        for e in engines ?? [] {
            if let up = e.synced.upload, let down = e.synced.download {
                s += "\n  \(e.name): upload \(up), download \(down) (\(e.synced.usable.count) usable)"
            } else {
                s += "\n  \(e.name): no usable pair"
            }
        }
        if let lossy = summary.lossExceeded, lossy > 0 {
            s += Style.warn("; \(lossy) lossy pair(s) above --max-loss left out of the exports")
        }
        if summary.notTested > 0 { s += "; \(summary.notTested) not tested" }
        if !run.complete { s += Style.warn(" [incomplete: \(run.interruption ?? "interrupted")]") }
        return s + "\nreport: \(directory)/scan.md"
    }
}

/// The terminal progress line: done/accepted/rejected/ETA, redrawn at most ten times a second.
final class ProgressLine: @unchecked Sendable {
    private let lock = NSLock()
    private var last = Date.distantPast

    func update(_ p: ScanProgress) {
        lock.lock()
        defer { lock.unlock() }
        guard Date().timeIntervalSince(last) >= 0.1 || p.done == p.total else { return }
        last = Date()
        let eta = p.etaSeconds.map { String(format: "%.0f s", $0) } ?? "-"
        FileHandle.standardError.write(Data("\r\u{1B}[Kscan: \(p.done)/\(p.total) done, \(p.accepted) accepted, \(p.rejected) rejected, ETA \(eta)".utf8))
    }

    func finish() { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
}
