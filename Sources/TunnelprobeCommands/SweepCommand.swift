import ArgumentParser
import Base
import DNSWire
import EngineModels
import Foundation
import Logging
import NIOCore
import ProbeClient
import ProbeProtocol
import Reports
import Results

/// `tunnelprobe sweep`: a stateless sweep of address ranges at a paced packet rate, and the staged
/// MTU scan (`scan`'s pipeline) of every address that answers, started while the sweep goes on.
///
/// A command of its own rather than a flag of `scan`: `scan` is stateful per pair from its first
/// probe and takes lists of resolvers, a sweep takes ranges, keeps no state per address, streams
/// and resumes; the two share the scan pipeline (`Scanner.scanPair`) and the report (`ScanReport`).
struct SweepCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sweep",
        abstract: "Sweep whole IPv4 ranges (and explicit IPv6 lists) for resolvers at a paced packet rate, then MTU-scan what answers.",
        discussion: """
        One authenticated echo probe per address (the scan's honesty probe, under the first --domain), \
        sent at --rate packets per second in a seeded random permutation of the ranges, so no network \
        sees a burst. The probe's authenticated name carries the address it was sent to, so answers \
        are matched without any state per address: memory is the same for a /24 and a /8. Every \
        address that answers (anything but REFUSED) goes at once to the staged MTU scan of `scan` \
        (reachability, honesty, upload, download, confirmation), for every --domain, while the sweep \
        goes on. A lossy resolver whose one sweep probe is lost is not found in that pass: --passes N \
        probes what did not answer again, in the same order. --expand-neighbours /24 sweeps the rest \
        of an answering address's /24 first. --shard I/N sweeps one of N disjoint parts of the same \
        permutation (one per machine); `report merge` joins them.
        Ranges: one entry per line, a.b.c.d/n, a.b.c.d-e.f.g.h or one address, # comments, anything \
        after the first field ignored (ipdeny.com zone files are such lists), or an RIR \
        delegated-extended statistics file with --country CC; overlaps are merged; no cap but \
        --sample. The report names each file with its SHA-256. A list may hold IPv6 entries too \
        (2001:db8::53, [2001:db8::53], 2001:db8::/120, a-b), swept over an IPv6 socket in the same \
        run and order: at most 65,536 addresses an entry (/112), since an exhaustive IPv6 sweep is \
        not meaningful; a larger one refuses the sweep. Reports write IPv6 as [2001:db8::53].
        Streams into the report directory as it goes: sweep.jsonl (every answer), pairs.jsonl (every \
        finished MTU scan), sweep.state (seed and position). After SIGINT or SIGTERM the sweep \
        stops sending, waits --timeout for the last answers, and exits 130; `--resume DIR` goes on \
        from there without probing any address again. At the end: scan.json and scan.md as `scan` \
        writes them, sweep.json (the sweep's figures and seed), answering.txt and accepted.txt (plain \
        address lists) and the engine exports.

        Example:
          tunnelprobe sweep --ranges country.txt --domain t.example.com --key-file probe.key --rate 2000
          tunnelprobe sweep --ranges delegated-ripencc-extended-latest --country IR --passes 3 --domain t.example.com --key-file probe.key
          tunnelprobe sweep --ranges country.txt --domain t.example.com --key-file probe.key --resume reports/sweep-...
        """
    )

    @Option(name: .customLong("ranges"), help: "File of IPv4 ranges: a list (CIDR, start-end or one address per line; ipdeny.com zone files are such lists; IPv6 addresses and prefixes of /112 or longer too) or an RIR delegated-extended statistics file (with --country); repeatable.")
    var rangeFiles: [String] = []

    @Option(name: .customLong("country"), help: "Country code whose ipv4 records a delegated --ranges file gives (repeatable; ISO 3166 two letters, as the RIRs write them).")
    var countries: [String] = []

    @Option(help: "Passes over the ranges: each later pass probes again, in the same order, the addresses that did not answer (a host dropping 30 % of queries is found with probability 1 - 0.3^N).")
    var passes: Int = 1

    @Option(help: "Sweep only part I/N of the seeded permutation (0 <= I < N, ZMap's numbering): N runs with the same --seed and ranges, one per machine, together probe every address once; `report merge` joins their reports.")
    var shard: String?

    @Option(help: "When an address answers, sweep the rest of its prefix first (e.g. /24; 16 to 31), within the ranges.")
    var expandNeighbours: String?

    @Option(name: .customLong("domain"), help: "Tunnel domain served by `tunnelprobe serve` (repeatable; the sweep probes under the first).")
    var domains: [String] = []

    @Option(help: "File with the pre-shared key (hexadecimal).")
    var keyFile: String

    @Option(help: "Sweep probes per second, never exceeded (the MTU scans of what answers come on top, paced by --per-resolver-qps).")
    var rate: Double = 1000

    @Option(help: "Sweep only this many addresses, a random subset (the first ones of the seeded permutation).")
    var sample: UInt64?

    @Flag(help: "Only sweep: find the addresses that answer (answering.txt), measure none of them.")
    var sweepOnly = false

    @OptionGroup var mtuScan: MTUScanOptions

    @Option(help: "MTU scans at once.")
    var concurrency: Int = 64

    @Option(help: "Seed of the permutation and of every random choice; random when absent, always reported.")
    var seed: UInt64?

    @Option(help: "Report directory (default reports/<run-id>).")
    var out: String?

    @Option(help: "Go on with the interrupted sweep in this report directory (same --ranges and --domain).")
    var resume: String?

    @Option(help: "Where this sweep runs from, recorded in the report (default: host name).")
    var vantage: String?

    @Option(help: "How the sweep's probes are sent: packet (IPv4 datagrams built here, sent on a packet socket: needs CAP_NET_RAW and one route for all the ranges), udp (the kernel's UDP socket), or auto (packet when it can be used, else udp; sweep.json says which and why).")
    var sendPath: SweepSendPathChoice = .auto

    @OptionGroup var common: CommonOptions

    func validate() throws {
        guard !rangeFiles.isEmpty else { throw ValidationError("give --ranges FILE") }
        guard !domains.isEmpty else { throw ValidationError("give at least one --domain") }
        guard rate >= 1, rate <= 1_000_000 else { throw ValidationError("--rate must be in 1...1000000 packets per second") }
        if let sample, sample < 1 { throw ValidationError("--sample must be 1 or more") }
        guard (1...10_000).contains(concurrency) else { throw ValidationError("--concurrency must be 1...10000") }
        if resume != nil, out != nil { throw ValidationError("--resume DIR writes into DIR: leave out --out") }
        for cc in countries where !(cc.count == 2 && cc.allSatisfy { $0.isASCII && $0.isLetter }) {
            throw ValidationError("--country \(cc): give a two-letter country code")
        }
        guard (1...16).contains(passes) else { throw ValidationError("--passes must be 1...16") }
        if let shard {
            guard SweepShard(shard) != nil else { throw ValidationError("--shard must be I/N with 0 <= I < N <= 65536 (e.g. 0/4 ... 3/4)") }
            if sample != nil { throw ValidationError("--shard and --sample together are not supported: shard the whole ranges") }
        }
        if expandNeighbours != nil, neighbourPrefix == nil { throw ValidationError("--expand-neighbours must be a prefix length /16 to /31 (e.g. /24)") }
    }

    var neighbourPrefix: Int? {
        guard let text = expandNeighbours else { return nil }
        guard let n = Int(text.hasPrefix("/") ? String(text.dropFirst()) : text), (16...31).contains(n) else { return nil }
        return n
    }

    func run() async throws {
        let logger = common.logger("tunnelprobe.sweep")
        let key = try loadProbeKey(keyFile)
        let zones = try domainNames(domains)
        let (ranges, rangeFileList, issues) = try loadRanges(logger: logger)
        let shardPart = shard.flatMap(SweepShard.init) ?? .whole

        let run = CommandRun(kind: "sweep", out: resume ?? out)
        let journal: SweepJournal
        do { journal = try SweepJournal(directory: run.directory) } catch { throw fail("\(error)", Exit.environment) }
        defer { journal.close() }
        let state = try sweepState(journal: journal, directory: run.directory, ranges: ranges, shard: shardPart)

        var configuration = ScanConfiguration(resolvers: [], domains: zones)
        let chosenEngines = mtuScan.engines
        configuration.recordTypes = ScanConfiguration.recordTypes(answering: chosenEngines)
        mtuScan.apply(to: &configuration, concurrency: concurrency, seed: state.seed)

        let engine = QueryEngine(seed: state.seed)
        let prober = Prober(engine: engine, key: key, encoding: configuration.encoding, timeout: configuration.timeout,
                            pacer: mtuScan.pacer)
        let scanner = Scanner(configuration: configuration, prober: prober)
        var sweepConfiguration = SweepConfiguration(ranges: ranges, seed: state.seed, rate: rate, sample: sample, timeout: mtuScan.timeout)
        sweepConfiguration.shard = shardPart
        sweepConfiguration.neighbourPrefix = neighbourPrefix
        sweepConfiguration.sendPath = sendPath
        let sweeper: Sweeper
        do {
            sweeper = try Sweeper(configuration: sweepConfiguration, probe: SweepProbe(prober: prober, zone: zones[0], salt: state.salt, ranges: ranges))
        } catch {
            await engine.shutdown()
            throw fail("\(error)", Exit.environment)
        }
        let sweepScan = SweepScan(sweeper: sweeper, scanner: scanner, journal: journal, measures: !sweepOnly)
        let line = common.showsProgress ? SweepProgressLine() : nil
        let resumed = resume != nil
        let initial = state
        var onProgress: (@Sendable (SweepProgress) -> Void)?
        if let line { onProgress = { line.update($0) } }
        let progress = onProgress
        let result = await run.measure(onSignal: { sweepScan.stop() }) {
            await sweepScan.run(state: initial, resumed: resumed, progress: progress)
        }
        line?.finish()
        let peakBeforeReport = SweepReport.peakRSS()
        await engine.shutdown()
        if result.resumedUnsettled {
            // The checkpoint is written ahead of each batch (a tenth of a second of probes), so a
            // kill loses at most that batch unsent and the answers of the last --timeout; neither is
            // probed again, which is what keeps every address at one probe.
            logger.warning("the interrupted run was killed without settling: up to \(Int(rate * (mtuScan.timeout + 0.1))) addresses (its last batch, written ahead, and the answers of its last --timeout) may be missed; none is probed again")
        }

        var info = run.info(seed: state.seed, vantage: vantage)
        if result.interrupted { info.complete = false }
        let answering = result.answers.filter(\.answering)
        var list = ResolverList()
        for a in answering { list.add(Endpoint(address: a.ip, port: 53)) }
        configuration.resolvers = list.resolvers
        var scanResult = ScanResult.swept(pairs: result.pairs, answering: answering.count, domains: zones.count, measured: !sweepOnly,
                                          interrupted: result.interrupted)
        scanResult.congestion = scanner.prober.congestion?.stats
        var document = ScanReport.build(run: info, configuration: configuration, list: list, result: scanResult,
                                        duration: result.seconds, engines: chosenEngines)
        document.input.listIssues = issues.map(\.description)
        var sweepDocument = SweepReport(result: result, configuration: sweepConfiguration, ranges: ranges, issues: issues)
        sweepDocument.rangeFiles = rangeFileList
        sweepDocument.vantage = info.vantage
        sweepDocument.peakRSSKiBBeforeReport = peakBeforeReport
        sweepDocument.sendPath = sweeper.sendPath
        let scanJSON = try ReportWriter.json(document)
        let sweepJSON = try ReportWriter.json(sweepDocument)
        var files = [("scan.json", scanJSON), ("scan.md", document.markdown()), ("sweep.json", sweepJSON),
                     ("answering.txt", answering.map { $0.address + "\n" }.joined()),
                     ("accepted.txt", SweepReport.addressLines(SweepReport.acceptedAddresses(result.pairs)))]
        files += document.engineExportFiles()
        try run.finish(json: sweepJSON, files: files,
                       summary: sweepDocument.summaryLine + "\n" + document.summaryLine(directory: run.directory), common: common)
        try run.exitStatus(failed: false)
    }
}

extension SweepCommand {
    /// Every `--ranges` file read and parsed for `--country`, joined; a file that cannot be read or
    /// refuses, a `--country` without a delegated file, too many IPv6 addresses or none at all is one
    /// line and exit 66. Lines that parse to nothing are `issues`, each a warning.
    func loadRanges(logger: Logger) throws -> (ranges: SweepRanges, files: [SweepRangeFile], issues: [ResolverList.Issue]) {
        var blocks: [SweepRanges.Block] = []
        var blocks6: [SweepRanges.Block6] = []
        var issues: [ResolverList.Issue] = []
        var files: [SweepRangeFile] = []
        let chosen = Set(countries.map { $0.uppercased() })
        for file in rangeFiles {
            guard let data = FileManager.default.contents(atPath: file) else { throw fail("--ranges \(file): cannot read the file", Exit.badInput) }
            let parsed = SweepRanges.load(bytes: Array(data), source: file, sha256: FileDigest.sha256(data), countries: chosen)
            if parsed.file.format == .delegated, chosen.isEmpty {
                throw fail("--ranges \(file) is an RIR delegated file: choose its countries with --country CC", Exit.badInput)
            }
            if let refused = parsed.refused.first { throw fail("\(refused)", Exit.badInput) }
            blocks += parsed.blocks
            blocks6 += parsed.blocks6
            issues += parsed.issues
            files.append(parsed.file)
        }
        if !chosen.isEmpty, !files.contains(where: { $0.format == .delegated }) {
            throw fail("--country applies to RIR delegated files, and no --ranges file is one", Exit.badInput)
        }
        let ranges = SweepRanges(blocks: blocks, blocks6: blocks6)
        for issue in issues { logger.warning("\(issue)") }
        guard ranges.ipv6Total <= SweepRanges.ipv6TotalCap else {
            throw fail("--ranges: the IPv6 entries give \(ranges.ipv6Total) addresses, more than the \(SweepRanges.ipv6TotalCap) one sweep takes", Exit.badInput)
        }
        guard ranges.total > 0 else { throw fail("no address in --ranges\(chosen.isEmpty ? "" : " for --country \(chosen.sorted().joined(separator: ","))")", Exit.badInput) }
        return (ranges, files, issues)
    }

    /// The interrupted sweep's state for `--resume` (every setting that fixes the order the same),
    /// or a new sweep's in a directory that holds none; anything else is one line and exit 66.
    func sweepState(journal: SweepJournal, directory: String, ranges: SweepRanges, shard: SweepShard) throws -> SweepJournal.State {
        let digest = SweepJournal.digest(ranges)
        guard resume != nil else {
            if journal.readState() != nil {
                throw fail("\(directory) holds a sweep already: resume it with --resume \(directory), or choose another --out", Exit.badInput)
            }
            return .start(seed: seed ?? UInt64.random(in: 0...UInt64.max), salt: UInt16.random(in: 0...UInt16.max), rangesDigest: digest,
                          rangesTotal: ranges.total, sample: sample, passes: passes, shard: shard, neighbourPrefix: neighbourPrefix)
        }
        guard var previous = journal.readState() else {
            throw fail("--resume \(directory): no \(SweepJournal.stateFile) there", Exit.badInput)
        }
        if let mismatch = previous.resumeMismatch(rangesDigest: digest, seed: seed, sample: sample, shard: shard, passes: passes,
                                                  neighbourPrefix: neighbourPrefix) {
            let line = switch mismatch {
            case .ranges: "the ranges differ from the interrupted sweep's"
            case let .seed(given, sweep): "--seed \(given) differs from the sweep's \(sweep)"
            case .sample: "--sample differs from the interrupted sweep's"
            case .shard: "--shard differs from the interrupted sweep's"
            case .passes: "--passes differs from the interrupted sweep's"
            case .neighbourPrefix: "--expand-neighbours differs from the interrupted sweep's"
            }
            throw fail("--resume: " + line, Exit.badInput)
        }
        previous.runs += 1
        return previous
    }
}

extension SweepReport {
    /// The addresses of the usable pairs, as `answering.txt` writes them (IPv6 as `[2001:db8::53]`).
    static func acceptedAddresses(_ pairs: [ScanPair]) -> Set<String> {
        Set(pairs.filter(\.usable).map { pair in
            (try? Endpoint(parsing: pair.resolver, defaultPort: 53)).map { SweepRanges.describe($0.address) } ?? pair.resolver
        })
    }

    /// Addresses one a line, in address order.
    static func addressLines(_ addresses: Set<String>) -> String {
        addresses.sorted { (SweepRanges.address($0) ?? .v4(0)) < (SweepRanges.address($1) ?? .v4(0)) }.map { $0 + "\n" }.joined()
    }

    /// A sweep's report directory as one shard for `report merge`; nil when it holds no sweep.
    static func shardPart(directory: String) -> SweepShardMerge.Part? {
        guard let data = FileManager.default.contents(atPath: directory + "/sweep.json"),
              let report = try? JSONDecoder().decode(SweepReport.self, from: data),
              let list = try? String(contentsOfFile: directory + "/answering.txt", encoding: .utf8) else { return nil }
        return SweepShardMerge.Part(source: directory, vantage: report.vantage, seed: report.seed, shard: report.shard ?? .whole,
                                    rangesDigest: report.rangesDigest, complete: report.complete,
                                    answering: list.split(separator: "\n").map(String.init))
    }

    var summaryLine: String {
        let pps = packetsPerSecond.map { String(format: "%.0f", $0) } ?? "-"
        var s = "sweep: \(swept) of \(planned) addresses probed (\(pps) pps sent, --rate \(String(format: "%.0f", rate))), \(answering) answering, \(measured) measured, \(accepted) accepted, \(String(format: "%.1f", seconds)) s"
        if let passes, passes.count > 1 {
            s += "; passes: " + passes.map { "\($0.pass): +\($0.newAnswering)" }.joined(separator: ", ")
        }
        if let neighbours {
            s += "; neighbours /\(neighbours.prefixLength): \(neighbours.foundAsNeighbours) found (\(neighbours.beyondSample) beyond the sample)"
            if let cut = neighbours.cutShort {
                s += Style.warn("; \(cut.count) prefixes cut short by the stop (\(neighbours.unprobedNeighbours ?? 0) neighbours not probed: --resume probes them first)")
            }
            if let left = neighbours.unexpandedAnswers, left > 0 {
                s += Style.warn("; \(left) answers not expanded yet (--resume expands them first)")
            }
        }
        if let shard { s += "; shard \(shard)" }
        if let sendPath { s += "; sent by \(sendPath.used.rawValue) (\(sendPath.reason))" }
        if !complete { s += Style.warn(" [incomplete: resume with --resume]") }
        return s
    }
}

/// The terminal line: swept, answering, measured, accepted, rate, ETA; redrawn at most ten times a second.
final class SweepProgressLine: @unchecked Sendable {
    private let lock = NSLock()
    private var last = Date.distantPast

    func update(_ p: SweepProgress) {
        lock.lock()
        defer { lock.unlock() }
        guard Date().timeIntervalSince(last) >= 0.1 else { return }
        last = Date()
        let eta = p.etaSeconds.map { String(format: "%.0f s", $0) } ?? "-"
        FileHandle.standardError.write(Data("\r\u{1B}[Ksweep: \(p.swept)/\(p.planned) swept, \(p.answering) answering, \(p.measured) measured, \(p.accepted) accepted, \(String(format: "%.0f", p.rate)) pps, ETA \(eta)".utf8))
    }

    func finish() { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
}
