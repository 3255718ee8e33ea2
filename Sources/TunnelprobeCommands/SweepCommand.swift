import ArgumentParser
import Base
import Crypto
import DNSWire
import EngineModels
import Foundation
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

    @Option(help: "Seconds to wait for each answer (the sweep waits this long after its last probe).")
    var timeout: Double = 2.0

    @Option(help: "Tries per size in the MTU scan when a probe times out or gets SERVFAIL.")
    var attempts: Int = 2

    @Option(help: "MTU scans at once.")
    var concurrency: Int = 64

    @Option(help: "Queries per second sent to any one resolver in the MTU scan (0 = no pacing).")
    var perResolverQps: Double = 100

    @Flag(help: "MTU scans without scan's congestion window (AIMD on the queries in flight); the sweep's own probes are paced by --rate either way.")
    var noCongestionControl = false

    @Option(help: "Confirmation probes per direction at the chosen sizes.")
    var confirm: Int = 3

    @Option(help: "Largest confirmation loss ratio (0-1) of a pair the exports take.")
    var maxLoss: Double = ScanConfiguration.defaultMaxLoss

    @Option(help: "Engines to give figures for, comma-separated, or all.")
    var engine: String = "all"

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
        guard timeout > 0, timeout <= 60 else { throw ValidationError("--timeout must be in (0, 60] seconds") }
        guard (1...10).contains(attempts) else { throw ValidationError("--attempts must be 1...10") }
        guard (1...10_000).contains(concurrency) else { throw ValidationError("--concurrency must be 1...10000") }
        guard perResolverQps >= 0 else { throw ValidationError("--per-resolver-qps must be 0 or more") }
        guard (0...100).contains(confirm) else { throw ValidationError("--confirm must be 0...100") }
        guard (0...1).contains(maxLoss) else { throw ValidationError("--max-loss must be in 0...1") }
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
        _ = try engines()
    }

    var neighbourPrefix: Int? {
        guard let text = expandNeighbours else { return nil }
        guard let n = Int(text.hasPrefix("/") ? String(text.dropFirst()) : text), (16...31).contains(n) else { return nil }
        return n
    }

    func engines() throws -> [Engine] {
        if engine.trimmingCharacters(in: .whitespaces).lowercased() == "all" { return Engine.allCases }
        let parsed = EngineCatalog.parse(engine)
        guard parsed.unknown.isEmpty, !parsed.engines.isEmpty else {
            throw ValidationError("--engine: unknown \(parsed.unknown.joined(separator: ", ")); use masterdnsvpn, masterdnsvpn-python, dnstt, slipstream, iodine or all")
        }
        return parsed.engines
    }

    func run() async throws {
        let logger = common.logger("tunnelprobe.sweep")
        let key: ProbeKey
        do { key = try ProbeKey.load(path: keyFile) } catch { throw fail("\(error)", Exit.badInput) }
        var zones: [DNSName] = []
        for d in domains {
            do { zones.append(try DNSName(d)) } catch { throw fail("--domain \(d): \(error)", .validationFailure) }
        }
        var blocks: [SweepRanges.Block] = []
        var blocks6: [SweepRanges.Block6] = []
        var issues: [ResolverList.Issue] = []
        var rangeFileList: [SweepRangeFile] = []
        let chosen = Set(countries.map { $0.uppercased() })
        for file in rangeFiles {
            guard let data = FileManager.default.contents(atPath: file) else { throw fail("--ranges \(file): cannot read the file", Exit.badInput) }
            let digest = SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
            let parsed = SweepRanges.load(bytes: Array(data), source: file, sha256: digest, countries: chosen)
            if parsed.file.format == .delegated, chosen.isEmpty {
                throw fail("--ranges \(file) is an RIR delegated file: choose its countries with --country CC", Exit.badInput)
            }
            if let refused = parsed.refused.first { throw fail("\(refused)", Exit.badInput) }
            blocks += parsed.blocks
            blocks6 += parsed.blocks6
            issues += parsed.issues
            rangeFileList.append(parsed.file)
        }
        if !chosen.isEmpty, !rangeFileList.contains(where: { $0.format == .delegated }) {
            throw fail("--country applies to RIR delegated files, and no --ranges file is one", Exit.badInput)
        }
        let ranges = SweepRanges(blocks: blocks, blocks6: blocks6)
        for issue in issues { logger.warning("\(issue)") }
        guard ranges.ipv6Total <= SweepRanges.ipv6TotalCap else {
            throw fail("--ranges: the IPv6 entries give \(ranges.ipv6Total) addresses, more than the \(SweepRanges.ipv6TotalCap) one sweep takes", Exit.badInput)
        }
        guard ranges.total > 0 else { throw fail("no address in --ranges\(chosen.isEmpty ? "" : " for --country \(chosen.sorted().joined(separator: ","))")", Exit.badInput) }
        let shardPart = shard.flatMap(SweepShard.init) ?? .whole

        let run = CommandRun(kind: "sweep", out: resume ?? out)
        let journal: SweepJournal
        do { journal = try SweepJournal(directory: run.directory) } catch { throw fail("\(error)", Exit.environment) }
        defer { journal.close() }
        let digest = SweepJournal.digest(ranges)
        var state: SweepJournal.State
        if resume != nil {
            guard var previous = journal.readState() else {
                throw fail("--resume \(run.directory): no \(SweepJournal.stateFile) there", Exit.badInput)
            }
            guard previous.rangesDigest == digest else { throw fail("--resume: the ranges differ from the interrupted sweep's", Exit.badInput) }
            if let seed, seed != previous.seed { throw fail("--resume: --seed \(seed) differs from the sweep's \(previous.seed)", Exit.badInput) }
            if sample != previous.sample { throw fail("--resume: --sample differs from the interrupted sweep's", Exit.badInput) }
            if (previous.shard ?? .whole) != shardPart { throw fail("--resume: --shard differs from the interrupted sweep's", Exit.badInput) }
            if (previous.passes ?? 1) != passes { throw fail("--resume: --passes differs from the interrupted sweep's", Exit.badInput) }
            if previous.neighbourPrefix != neighbourPrefix { throw fail("--resume: --expand-neighbours differs from the interrupted sweep's", Exit.badInput) }
            previous.runs += 1
            state = previous
        } else {
            if journal.readState() != nil {
                throw fail("\(run.directory) holds a sweep already: resume it with --resume \(run.directory), or choose another --out", Exit.badInput)
            }
            state = SweepJournal.State(seed: seed ?? UInt64.random(in: 0...UInt64.max), salt: UInt16.random(in: 0...UInt16.max),
                                       rangesDigest: digest, rangesTotal: ranges.total, sample: sample,
                                       checkpoint: SweepCheckpoint(), runs: 1)
            state.passes = passes
            state.pass = 1
            state.shard = shardPart
            state.neighbourPrefix = neighbourPrefix
        }

        var configuration = ScanConfiguration(resolvers: [], domains: zones)
        let chosenEngines = try engines()
        let wanted = Set(chosenEngines.map { EngineCatalog.model(for: $0).downloadRecordType.rawValue })
        configuration.recordTypes = (["TXT"] + wanted.subtracting(["TXT"]).sorted()).compactMap { DNSType(name: $0) }
            .filter { DownloadLayout.supportedTypes.contains($0) }
        configuration.timeout = .milliseconds(Int64(timeout * 1000))
        configuration.attempts = attempts
        configuration.concurrency = concurrency
        configuration.perResolverQPS = perResolverQps
        configuration.confirmProbes = confirm
        configuration.seed = state.seed
        configuration.maxLoss = maxLoss
        configuration.congestionControl = !noCongestionControl

        let engine = QueryEngine(seed: state.seed)
        let prober = Prober(engine: engine, key: key, encoding: configuration.encoding, timeout: configuration.timeout,
                            pacer: perResolverQps > 0 ? Pacer(queriesPerSecond: perResolverQps) : nil)
        let scanner = Scanner(configuration: configuration, prober: prober)
        var sweepConfiguration = SweepConfiguration(ranges: ranges, seed: state.seed, rate: rate, sample: sample, timeout: timeout)
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
            logger.warning("the interrupted run was killed without settling: up to \(Int(rate * (timeout + 0.1))) addresses (its last batch, written ahead, and the answers of its last --timeout) may be missed; none is probed again")
        }

        var info = run.info(seed: state.seed, vantage: vantage)
        if result.interrupted { info.complete = false }
        let answering = result.answers.filter(\.answering)
        var list = ResolverList()
        for a in answering { list.add(Endpoint(address: a.ip, port: 53)) }
        configuration.resolvers = list.resolvers
        let measuredPairs = Set(result.pairs.map { "\($0.resolver) \($0.domain)" })
        let notTested = sweepOnly ? 0 : answering.count * zones.count - measuredPairs.count
        var scanResult = ScanResult.measured(pairs: result.pairs, notTested: max(0, notTested),
                                              queries: result.pairs.reduce(0) { $0 + $1.queries }, interrupted: result.interrupted)
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
