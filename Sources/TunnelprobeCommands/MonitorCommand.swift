import ArgumentParser
import Base
import OSLayer
import DNSWire
import EngineModels
import Foundation
import ProbeClient
import ProbeProtocol
import Reports
import Results

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
        the set of pairs that are up, or their order, changes. monitor.json and monitor.md give each \
        pair's share of checks passed (Wilson 95 % interval), time since its last failure and its \
        outages. Memory stays flat: per pair only counts and the latest outages are held; the \
        history is on disk. It runs until --duration or --checks is reached, or until stopped \
        (Ctrl-C, SIGTERM), and then writes its report: a stop at any moment keeps the history.
        With --rate-interval, each pair's sustainable query rate is measured as soon as it is up and \
        again every --rate-interval seconds (rank's knee search: paced queries at rising rates, the \
        knee narrowed by bisection, RFC 2544 26.1), never above --rate-ceiling q/s nor longer than \
        --rate-pair-budget s, each step ended at its first sign of trouble; the pair is not checked \
        meanwhile. Each measurement is a line of history.jsonl with "rate"; monitor.json keeps the \
        first, latest, lowest and highest per pair, and the resolver files list the measured pairs \
        by the goodput of their latest measurement, best first. Off by default: a measurement drives \
        a resolver to its limit.
        Pairs scanned over tcp://, tls:// or https:// are checked over that transport (give the \
        scan's --tls-ca/--tls-pin/--doh-method again); a check whose connection cannot be set up \
        fails with the connection's named reason (unknownCA, connectionRefused, ...).

        Example:
          tunnelprobe monitor --scan reports/scan-20260101-120000 --key-file probe.key --interval 60
          tunnelprobe monitor --scan reports/scan-20260101-120000 --key-file probe.key --interval 60 --rate-interval 3600
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
    var engine: EngineList?

    @Option(help: "Pairs checked at once.")
    var parallel: Int = 32

    @Option(help: "Seed for every random choice (DNS ids); random when absent, always reported.")
    var seed: UInt64?

    @Option(help: "Report directory (default reports/<run-id>).")
    var out: String?

    @Option(help: "Measure each pair's sustainable query rate again every this many seconds (default: never; each measurement drives the resolver to its limit).")
    var rateInterval: Double?

    @Option(help: "While measuring a rate: never more than this many queries per second to one resolver.")
    var rateCeiling: Double = CapacitySettings().ceiling

    @Option(help: "Time budget of one pair's rate measurement, seconds.")
    var ratePairBudget: Double = 45

    @Option(help: "First step's rate of a rate measurement, queries per second.")
    var rateStart: Double = CapacitySettings().startRate

    @Option(help: "Seconds each step of a rate measurement sends.")
    var rateStepSeconds: Double = 2

    @Option(help: "Quiet seconds between the steps of a rate measurement.")
    var ratePauseSeconds: Double = 0.5

    @Option(help: "Seconds to wait for each answer while measuring a rate (Tmax of RFC 7680 loss).")
    var rateTimeout: Double = CapacitySettings().timeoutSeconds

    @Option(help: "Pairs whose rate is measured at once.")
    var rateParallel: Int = 2

    @OptionGroup var transportOptions: TransportOptions

    @OptionGroup var common: CommonOptions

    func validate() throws {
        guard interval >= 0, interval <= 86_400 else { throw ValidationError("--interval must be 0 to 86400 seconds") }
        if let duration { guard duration > 0 else { throw ValidationError("--duration must be above 0") } }
        if let checks { guard checks > 0 else { throw ValidationError("--checks must be 1 or more") } }
        guard (0...10_000).contains(spares) else { throw ValidationError("--spares must be 0...10000") }
        guard (1...10).contains(attempts) else { throw ValidationError("--attempts must be 1...10") }
        guard timeout > 0, timeout <= 60 else { throw ValidationError("--timeout must be in (0, 60] seconds") }
        guard (1...1024).contains(parallel) else { throw ValidationError("--parallel must be 1...1024") }
        if let rateInterval { guard rateInterval >= 1, rateInterval <= 30 * 86_400 else { throw ValidationError("--rate-interval must be 1 to 2592000 seconds") } }
        if let problem = rateSettings().problem() { throw ValidationError("--rate-*: \(problem)") }
    }

    /// The knee search of `rank`, bounded for a measurement repeated while monitoring.
    func rateSettings() -> CapacitySettings {
        var s = CapacitySettings()
        s.startRate = rateStart
        s.ceiling = rateCeiling
        s.stepSeconds = rateStepSeconds
        s.pauseSeconds = ratePauseSeconds
        s.timeoutSeconds = rateTimeout
        s.pairBudgetSeconds = ratePairBudget
        s.totalBudgetSeconds = ratePairBudget
        s.parallel = rateParallel
        return s
    }

    func run() async throws {
        let run = CommandRun(kind: "monitor", out: out)
        let key = try loadProbeKey(keyFile)
        let report = try RankCommand.loadScan(scan)
        let engines = RankCommand.engines(engine, report: report)
        var targets: [MonitorTarget] = []
        func target(_ p: ScanPair, spare: Bool) -> MonitorTarget? {
            MonitorTarget(pair: p, spare: spare, fallbackAnswerBytes: report.settings.downloadBytes.min)
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
        var configured = Prober(engine: queryEngine, key: key, encoding: encoding, timeout: .milliseconds(Int64(timeout * 1000)))
        // Pairs scanned over TCP, TLS or HTTPS are checked over it, through one transport engine.
        let transports = try transportOptions.attach(to: &configured, targets: streamTargets(targets.map(\.target)), seed: seed)
        let prober = configured
        let rateSettings = rateSettings()
        let rateProbe = rateInterval.map { _ in
            var rateProber = prober
            rateProber.timeout = .milliseconds(Int64(rateSettings.timeoutSeconds * 1000))
            return CapacityProbe(prober: rateProber, settings: rateSettings, endsTroubledSteps: true)
        }
        let directory = run.directory
        do { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) } catch {
            throw fail("cannot create \(directory): \(error)", Exit.environment)
        }
        let historyPath = directory + "/history.jsonl"
        guard FileManager.default.createFile(atPath: historyPath, contents: nil), let history = FileHandle(forWritingAtPath: historyPath) else {
            throw fail("cannot write \(historyPath)", Exit.environment)
        }
        if !common.quiet {
            let rates = rateInterval.map { "; rates every \($0) s, up to \(CapacityProbe.rate(rateSettings.ceiling)) q/s" } ?? ""
            printErr("monitor: \(targets.count) pair(s) every \(interval) s\(rates); history in \(historyPath)")
        }
        let historyFD = history.fileDescriptor
        let monitor = MonitorRun(targets: targets,
                                 settings: .init(interval: interval, duration: duration, checks: checks, attempts: attempts, parallel: parallel,
                                                 rateInterval: rateInterval, rateParallel: rateParallel),
                                 engineScans: engineScans, directory: directory)
        let check = MonitorRun.probing(targets, with: prober, attempts: attempts)
        let measure = rateProbe.map { MonitorRun.measuring(targets, with: $0) }
        // Everything runs on the query engine's event loop: see EventLoopTaskExecutor for why.
        let loop = Task(executorPreference: queryEngine.taskExecutor) {
            await monitor.run(historyFD: historyFD, check: check, measure: measure)
        }
        let state = await run.measure(onSignal: { loop.cancel() }) { await loop.value }
        try? history.close()
        if let failure = state.historyFailure { printErr("tunnelprobe: warning: \(historyPath): \(failure); the history stops there") }
        await transports?.shutdown()
        await queryEngine.shutdown()

        let rates = rateInterval.map { MonitorReport.RateSettings(intervalSeconds: $0, parallel: rateParallel, capacity: rateSettings) }
        let document = MonitorReport(run: run.info(seed: seed), scan: report.run, intervalSeconds: interval, attempts: attempts,
                                     timeoutMs: Int(timeout * 1000), rounds: state.rounds, checks: state.checks,
                                     elapsedSeconds: state.elapsed, pairs: state.pairs, rewrites: state.rewrites,
                                     rewriteTimes: state.rewriteTimes, memory: state.memory, engines: engines.map(\.rawValue),
                                     rates: rates)
        let json = try ReportWriter.json(document)
        let up = state.pairs.filter(\.up).count
        let measuredRates = state.pairs.map { $0.rates?.measurements ?? 0 }.reduce(0, +)
        try run.finish(json: json, files: [("monitor.json", json), ("monitor.md", document.markdown())],
                       summary: "\(state.checks) checks in \(state.rounds) rounds" + (rateInterval == nil ? "" : ", \(measuredRates) rate measurement(s)")
                           + "; \(up) of \(state.pairs.count) pair(s) up now; resolver files rewritten \(state.rewrites) time(s)\nreport: \(directory)/monitor.md",
                       common: common)
        try run.exitStatus(failed: up == 0)
    }
}
