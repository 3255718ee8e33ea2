import ArgumentParser
import Base
import DNSWire
import EngineModels
import Foundation
import NIOCore
import ProbeClient
import ProbeProtocol
import Reports

struct MonitorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "monitor",
        abstract: "Re-check a scan's pairs at an interval: stability over time, and the engine's resolver file kept current.",
        discussion: """
        Resolvers that pass once stop working an hour later. monitor re-checks the accepted pairs of a \
        scan report (and up to --spares of the rejected ones) every --interval seconds with one \
        tunnel-shaped query each (a name of the pair's upload MTU asking for a TXT answer of its \
        download MTU; --attempts tries), appends every check to history.jsonl as it happens, and \
        rewrites each engine's resolver file (exports/<engine>/, temporary file then rename) whenever \
        the set of pairs that are up changes. monitor.json and monitor.md give each pair's share of \
        checks passed (Wilson 95 % interval), time since its last failure and its outages. Memory \
        stays flat: per pair only counts and the latest outages are held; the history is on disk. \
        It runs until --duration or --checks is reached, or until stopped (Ctrl-C, SIGTERM), and \
        then writes its report: a stop at any moment keeps the history.

        Example:
          tunnelprobe monitor --scan reports/scan-20260101-120000 --key-file probe.key --interval 60
        """
    )

    @Option(help: "The scan report (scan.json, or its directory) whose pairs are re-checked.")
    var scan: String

    @Option(help: "File with the pre-shared key (hexadecimal), as the scan used.")
    var keyFile: String

    @Option(help: "Seconds between the starts of two rounds of checks.")
    var interval: Double = 60

    @Option(help: "Stop after this many seconds (default: until stopped or --checks).")
    var duration: Double?

    @Option(help: "Stop after this many checks in all (default: until stopped or --duration).")
    var checks: Int?

    @Option(help: "Rejected pairs that got past honesty, watched too in case they come back.")
    var spares: Int = 0

    @Option(help: "Tries per check; one passing try passes the check.")
    var attempts: Int = 2

    @Option(help: "Seconds to wait for each answer.")
    var timeout: Double = 2

    @Option(help: "Engines whose resolver files are kept, comma-separated (default: the scan's).")
    var engine: String?

    @Option(help: "Pairs checked at once.")
    var parallel: Int = 32

    @Option(help: "Seed for every random choice (DNS ids); random when absent, always reported.")
    var seed: UInt64?

    @Option(help: "Report directory (default reports/<run-id>).")
    var out: String?

    @OptionGroup var common: CommonOptions

    func validate() throws {
        guard interval >= 0, interval <= 86_400 else { throw ValidationError("--interval must be 0 to 86400 seconds") }
        if let duration { guard duration > 0 else { throw ValidationError("--duration must be above 0") } }
        if let checks { guard checks > 0 else { throw ValidationError("--checks must be 1 or more") } }
        guard (0...10_000).contains(spares) else { throw ValidationError("--spares must be 0...10000") }
        guard (1...10).contains(attempts) else { throw ValidationError("--attempts must be 1...10") }
        guard timeout > 0, timeout <= 60 else { throw ValidationError("--timeout must be in (0, 60] seconds") }
        guard (1...1024).contains(parallel) else { throw ValidationError("--parallel must be 1...1024") }
    }

    func run() async throws {
        let run = CommandRun(kind: "monitor", out: out)
        let key: ProbeKey
        do { key = try ProbeKey.load(path: keyFile) } catch { throw fail("\(error)", Exit.badInput) }
        let report = try RankCommand.loadScan(scan)
        let engines = try RankCommand.engines(engine, report: report)
        var targets: [MonitorTarget] = []
        func target(_ p: ScanPair, spare: Bool) -> MonitorTarget? {
            guard let resolver = try? Endpoint(parsing: p.resolver, defaultPort: 53), let zone = try? DNSName(p.domain) else { return nil }
            let chars = p.upload?.payloadChars ?? ProbeMeta.characterCount
            let bytes = p.download?.bytes ?? report.settings.downloadBytes.min
            return MonitorTarget(resolver: resolver, zone: zone, queryCharacters: chars, answerBytes: bytes, spare: spare)
        }
        targets += report.pairs.filter(\.accepted).compactMap { target($0, spare: false) }
        let spareCandidates = report.pairs.filter { !$0.accepted && $0.stage != .reachability && $0.stage != .honesty }
        targets += spareCandidates.prefix(spares).compactMap { target($0, spare: true) }
        guard !targets.isEmpty else { throw fail("the scan has no pair to watch", Exit.badInput) }
        let scans = report.engines ?? EngineScan.all(engines, pairs: report.pairs)
        let engineScans = engines.compactMap { e in scans.first { $0.engine == e } }

        let seed = seed ?? UInt64.random(in: 0...UInt64.max)
        let queryEngine = QueryEngine(seed: seed)
        let encoding = LabelEncoding(rawValue: report.settings.encoding) ?? .base32
        let prober = Prober(engine: queryEngine, key: key, encoding: encoding, timeout: .milliseconds(Int64(timeout * 1000)))
        let directory = run.directory
        do { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) } catch {
            throw fail("cannot create \(directory): \(error)", Exit.environment)
        }
        let historyPath = directory + "/history.jsonl"
        guard FileManager.default.createFile(atPath: historyPath, contents: nil), let history = FileHandle(forWritingAtPath: historyPath) else {
            throw fail("cannot write \(historyPath)", Exit.environment)
        }
        if !common.quiet {
            printErr("monitor: \(targets.count) pair(s) every \(interval) s; history in \(historyPath)")
        }
        let settings = (interval: interval, duration: duration, checks: checks, attempts: attempts, parallel: parallel)
        let loop = Task { [targets, engineScans] () -> MonitorState in
            var state = MonitorState(targets: targets)
            let clock = ContinuousClock()
            let started = clock.now
            func since() -> Double {
                let d = clock.now - started
                return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
            }
            var nextMemorySample = 1
            while !Task.isCancelled {
                if let limit = settings.duration, since() >= limit { break }
                if let limit = settings.checks, state.checks >= limit { break }
                let roundStart = clock.now
                let results = await withTaskGroup(of: (Int, ProbeOutcome).self) { group in
                    var out: [(Int, ProbeOutcome)] = []
                    var next = 0
                    for _ in 0..<Swift.min(settings.parallel, targets.count) {
                        let i = next
                        next += 1
                        group.addTask { (i, await targets[i].check(with: prober, attempts: settings.attempts)) }
                    }
                    while let done = await group.next() {
                        out.append(done)
                        if next < targets.count, !Task.isCancelled {
                            let i = next
                            next += 1
                            group.addTask { (i, await targets[i].check(with: prober, attempts: settings.attempts)) }
                        }
                    }
                    return out
                }
                if Task.isCancelled, results.count < targets.count { break }
                let at = since()
                state.rounds += 1
                for (i, outcome) in results.sorted(by: { $0.0 < $1.0 }) {
                    if let limit = settings.checks, state.checks >= limit { break }
                    let rtt = outcome.ok ? outcome.rttNanos.map { Double($0) / 1e6 } : nil
                    state.pairs[i].record(ok: outcome.ok, at: at, rttMs: rtt, failure: outcome.failure?.rawValue)
                    state.checks += 1
                    history.write(Data(Self.historyLine(at: at, target: targets[i], outcome: outcome, rtt: rtt).utf8))
                    if state.checks >= nextMemorySample {
                        state.memory.append(.init(checks: state.checks, rssKB: Self.residentKB()))
                        nextMemorySample *= 10
                    }
                }
                // The resolvers that are up, accepted ones first, in the scan's order.
                let upSet = state.pairs.indices.filter { state.pairs[$0].up }.sorted { (targets[$0].spare ? 1 : 0, $0) < (targets[$1].spare ? 1 : 0, $1) }
                if upSet != state.lastUpSet {
                    Self.writeExports(engineScans, up: upSet.map { state.pairs[$0] }, directory: directory)
                    if state.lastUpSet != nil {
                        state.rewrites += 1
                        state.rewriteTimes.append(at)
                    }
                    state.lastUpSet = upSet
                }
                state.elapsed = since()
                let wake = roundStart + .milliseconds(Int64(settings.interval * 1000))
                if wake > clock.now {
                    if let limit = settings.duration, since() + settings.interval > limit { break }
                    try? await Task.sleep(until: wake, clock: clock)
                }
            }
            state.elapsed = since()
            state.memory.append(.init(checks: state.checks, rssKB: Self.residentKB()))
            return state
        }
        let state = await run.measure(onSignal: { loop.cancel() }) { await loop.value }
        try? history.close()
        await queryEngine.shutdown()

        let document = MonitorReport(run: run.info(seed: seed), scan: report.run, intervalSeconds: interval, attempts: attempts,
                                     timeoutMs: Int(timeout * 1000), rounds: state.rounds, checks: state.checks,
                                     elapsedSeconds: state.elapsed, pairs: state.pairs, rewrites: state.rewrites,
                                     rewriteTimes: state.rewriteTimes, memory: state.memory, engines: engines.map(\.rawValue))
        let json = try ReportWriter.json(document)
        let up = state.pairs.filter(\.up).count
        try run.finish(json: json, files: [("monitor.json", json), ("monitor.md", document.markdown())],
                       summary: "\(state.checks) checks in \(state.rounds) rounds; \(up) of \(state.pairs.count) pair(s) up now; resolver files rewritten \(state.rewrites) time(s)\nreport: \(directory)/monitor.md",
                       common: common)
        try run.exitStatus(failed: up == 0)
    }

    struct MonitorState: Sendable {
        var pairs: [PairStability]
        var checks = 0
        var rounds = 0
        var rewrites = 0
        var rewriteTimes: [Double] = []
        var memory: [MonitorReport.MemorySample] = []
        var lastUpSet: [Int]?
        var elapsed = 0.0

        init(targets: [MonitorTarget]) {
            pairs = targets.map { PairStability(resolver: $0.resolver.description, domain: $0.zone.description, spare: $0.spare) }
        }
    }

    /// One JSON line per check: seconds since the start, the pair, pass or the failure, the RTT.
    static func historyLine(at: Double, target: MonitorTarget, outcome: ProbeOutcome, rtt: Double?) -> String {
        func escape(_ s: String) -> String { s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") }
        var line = "{\"t\":\(String(format: "%.3f", at)),\"resolver\":\"\(escape(target.resolver.description))\",\"domain\":\"\(escape(target.zone.description))\",\"ok\":\(outcome.ok)"
        if let f = outcome.failure { line += ",\"failure\":\"\(f.rawValue)\"" }
        if let rtt { line += ",\"rttMs\":\(String(format: "%.3f", rtt))" }
        return line + "}\n"
    }

    /// Each engine's files for the pairs that are up, written beside the report: temporary file,
    /// then rename, so a reader never sees half a file.
    static func writeExports(_ scans: [EngineScan], up: [PairStability], directory: String) {
        for scan in scans {
            let model = EngineCatalog.model(for: scan.engine)
            var figures: [String: PairFigures] = [:]
            for f in scan.synced.usable { figures[f.resolver + " " + f.domain] = f }
            let chosen = up.compactMap { figures[$0.resolver + " " + $0.domain] }
            let files = model.exports(SyncedFigures(engine: scan.engine, upload: scan.synced.upload, download: scan.synced.download,
                                                    usable: chosen, rejected: []))
            let dir = directory + "/exports/\(scan.engine.rawValue)"
            try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            for file in files {
                try? Data(file.text.utf8).write(to: URL(fileURLWithPath: dir + "/" + file.name), options: .atomic)
            }
        }
    }

    /// VmRSS of this process in kB, 0 when /proc cannot be read.
    static func residentKB() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0
        }
        return 0
    }
}
