import ArgumentParser
import Base
import OSLayer
import DNSWire
import EngineModels
import Foundation
import NIOCore
import ProbeClient
import ProbeProtocol
import Reports
import Results

struct RankCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rank",
        abstract: "Measure each accepted pair's sustainable query rate and rank the resolvers by the data they move.",
        discussion: """
        MTU is not speed: what decides a tunnel's speed is each resolver's sustainable query rate, \
        its loss and delay at that rate, times the engine's frame size. For every accepted pair of a \
        scan report, rank sends paced tunnel-shaped queries (names of the pair's upload MTU asking for \
        answers of its download MTU) at a rate raised step by step (--start-rate, x --growth per \
        --step-seconds step) until loss, REFUSED/SERVFAIL or a growing delay says the resolver is \
        limiting, narrows the knee by bisection (RFC 2544 26.1 throughput), and asks once more below \
        it. A limit whose answers stop or turn REFUSED/SERVFAIL and come back below is a rate \
        limiter; one whose delay grew first is congestion. Never faster than --ceiling, never longer \
        than --pair-budget per pair and --budget in all.
        Per engine (--engine, default: the scan's), the pairs are ranked by expected goodput \
        (sustainable rate x (1 - loss) x the engine's payload bytes per query) and the engine's \
        resolver file is written best first under exports/<engine>/; --target 200kB/s plans the \
        fewest resolvers that move it (exports/<engine>/plan/).
        Loss is RFC 7680's (Tmax = --timeout) with a Wilson 95 % interval; RTT is RFC 2681's.
        Pairs scanned over tcp://, tls:// or https:// are measured over that transport (give the \
        scan's --tls-ca/--tls-pin/--doh-method again): queries pipelined on at most \
        --connections-per-resolver connections, one query first to open them (its RTT, set-up \
        included, is reported apart), and the connections set up and failed are counted. Over a \
        stream the kernel retransmits, so "lost" there means not answered within Tmax (a timeout), \
        not a datagram lost on the path.
        Writes rank.json and rank.md into reports/<run-id>/.

        Example:
          tunnelprobe rank --scan reports/scan-20260101-120000/scan.json --key-file probe.key --target 200kB/s
        """
    )

    @Option(help: "The scan report (scan.json, or its directory) whose accepted pairs are measured.")
    var scan: String

    @Option(help: "File with the pre-shared key (hexadecimal), as the scan used.")
    var keyFile: String

    @Option(help: "Engines to rank for, comma-separated (default: the scan's).")
    var engine: EngineList?

    @Option(help: "A goodput to plan for, e.g. 200kB/s, 50000B/s, 1.5MB/s (down unless --target-direction up).")
    var target: String?

    @Option(help: "Which direction --target is: down or up.")
    var targetDirection: Direction = .down

    @Option(help: "First step's rate, queries per second.")
    var startRate: Double = CapacitySettings().startRate

    @Option(help: "Factor between steps until the first trouble.")
    var growth: Double = CapacitySettings().growth

    @Option(help: "Never more than this many queries per second to one resolver.")
    var ceiling: Double = CapacitySettings().ceiling

    @Option(help: "Seconds each step sends.")
    var stepSeconds: Double = CapacitySettings().stepSeconds

    @Option(help: "Quiet seconds between steps.")
    var pauseSeconds: Double = CapacitySettings().pauseSeconds

    @Option(help: "Bisection steps between the last clean and the first troubled rate.")
    var refineSteps: Int = CapacitySettings().refineSteps

    @Option(help: "Seconds to wait for each answer (Tmax of RFC 7680 loss).")
    var timeout: Double = CapacitySettings().timeoutSeconds

    @Option(help: "A step is troubled above this share of failed queries (0-1).")
    var maxFailureRatio: Double = CapacitySettings().maxFailureRatio

    @Option(help: "Time budget per pair, seconds.")
    var pairBudget: Double = CapacitySettings().pairBudgetSeconds

    @Option(help: "Time budget of the whole run, seconds.")
    var budget: Double = CapacitySettings().totalBudgetSeconds

    @Option(help: "Pairs measured at once.")
    var parallel: Int = CapacitySettings().parallel

    @Option(help: "Only these resolvers of the scan (repeatable, ip or ip:port).")
    var only: [String] = []

    @Option(help: "Seed for every random choice (order, DNS ids); random when absent, always reported.")
    var seed: UInt64?

    @Option(help: "Report directory (default reports/<run-id>).")
    var out: String?

    @OptionGroup var transportOptions: TransportOptions

    @OptionGroup var common: CommonOptions

    func settings() throws -> CapacitySettings {
        var s = CapacitySettings()
        s.startRate = startRate
        s.growth = growth
        s.ceiling = ceiling
        s.stepSeconds = stepSeconds
        s.pauseSeconds = pauseSeconds
        s.refineSteps = refineSteps
        s.timeoutSeconds = timeout
        s.maxFailureRatio = maxFailureRatio
        s.pairBudgetSeconds = pairBudget
        s.totalBudgetSeconds = budget
        s.parallel = parallel
        if let problem = s.problem() { throw ValidationError(problem) }
        return s
    }

    func validate() throws {
        _ = try settings()
        if let target { _ = try Self.parseRate(target) }
    }

    /// "200kB/s", "50000B/s", "1.5MB/s", "200k" (bytes per second, SI prefixes).
    static func parseRate(_ text: String) throws -> Double {
        var t = text.trimmingCharacters(in: .whitespaces)
        if t.lowercased().hasSuffix("/s") { t.removeLast(2) }
        if t.hasSuffix("B") { t.removeLast() }
        var factor = 1.0
        switch t.last {
        case "k", "K": factor = 1e3; t.removeLast()
        case "M": factor = 1e6; t.removeLast()
        default: break
        }
        guard let v = Double(t), v > 0, v.isFinite else {
            throw ValidationError("--target \(text): give bytes per second, e.g. 200kB/s, 50000B/s or 1.5MB/s")
        }
        return v * factor
    }

    func run() async throws {
        let settings = try settings()
        let run = CommandRun(kind: "rank", out: out)
        let key = try loadProbeKey(keyFile)
        let report = try Self.loadScan(scan)
        let engines = Self.engines(engine, report: report)
        let pairs = RankTarget.measurable(report.pairs, only: only)
        guard !pairs.isEmpty else { throw fail("the scan has no accepted pair to measure", Exit.badInput) }

        let seed = seed ?? UInt64.random(in: 0...UInt64.max)
        let order = RankRun.order(count: pairs.count, seed: seed)
        let engine = QueryEngine(seed: seed)
        let encoding = LabelEncoding(rawValue: report.settings.encoding) ?? .base32
        var prober = Prober(engine: engine, key: key, encoding: encoding,
                            timeout: .milliseconds(Int64(settings.timeoutSeconds * 1000)))
        let transports = try transportOptions.attach(to: &prober, targets: streamTargets(pairs.map(\.target)), seed: seed)
        let rankRun = RankRun(probe: CapacityProbe(prober: prober, settings: settings))
        if !common.quiet {
            let kinds = Set(pairs.map(\.target.transport)).sorted { $0.rawValue < $1.rawValue }.map(\.rawValue).joined(separator: ", ")
            printErr("rank: \(pairs.count) pair(s) over \(kinds), up to \(Int(settings.ceiling)) q/s each, \(settings.parallel) at once, budget \(Int(settings.totalBudgetSeconds)) s")
        }
        let measureAll = Task { [pairs, order, rankRun] in await rankRun.measure(pairs, order: order) }
        let measured = await run.measure(onSignal: { measureAll.cancel() }) { await measureAll.value }
        await transports?.shutdown()
        await engine.shutdown()

        let capacities = pairs.indices.compactMap { measured[$0] }
        let notMeasured = pairs.indices.filter { measured[$0] == nil }.map { pairs[$0].target.description }
        let scans = report.engines ?? EngineScan.all(engines, pairs: report.pairs)
        let targetGoodput = try target.map { (direction: targetDirection, bytesPerSecond: try Self.parseRate($0)) }
        let rankings = engines.compactMap { e in scans.first { $0.engine == e } }
            .map { EngineRanking.build($0, capacities: capacities, target: targetGoodput) }
        var info = run.info(seed: seed)
        if measured.count < pairs.count, info.complete, !notMeasured.isEmpty { info.interruption = info.interruption ?? nil }
        let document = RankReport(run: info, scan: report.run, settings: settings, pairs: capacities, engines: rankings,
                                  notMeasured: notMeasured)
        let json = try ReportWriter.json(document)
        try run.finish(json: json, files: [("rank.json", json), ("rank.md", document.markdown())] + document.exportFiles(),
                       summary: Self.summary(document, directory: run.directory), common: common)
        try run.exitStatus(failed: capacities.allSatisfy { $0.sustainableRate == 0 })
    }

    /// A scan report from `path` (scan.json or its directory), bounded and checked before decoding.
    static func loadScan(_ path: String) throws -> ScanReport {
        let scanPath = FileManager.default.fileExists(atPath: path + "/scan.json") ? path + "/scan.json" : path
        guard let bytes = SystemCall.readFile(scanPath, limit: JSONLimits.report.maxBytes + 1) else {
            throw fail("--scan \(scanPath): cannot be read", Exit.badInput)
        }
        let report: ScanReport
        do {
            try JSONLimits.report.check(bytes)
            report = try JSONDecoder().decode(ScanReport.self, from: Data(bytes))
        } catch {
            throw fail("--scan \(scanPath): not a scan report (\(error))", Exit.badInput)
        }
        // rank and monitor send tunnelprobe's own probes, which only `tunnelprobe serve` answers.
        if report.server != nil {
            throw fail("--scan \(scanPath): this scan asked a MasterDnsVPN server in its own requests; rank and monitor probe `tunnelprobe serve` (scan the pairs with --key-file through serve, or serve --forward in front of the server)", Exit.badInput)
        }
        return report
    }

    /// `--engine`, or the engines the scan named, or all.
    static func engines(_ list: EngineList?, report: ScanReport) -> [Engine] {
        if let list { return list.engines }
        return (report.settings.engines ?? []).compactMap(Engine.init(name:)).nonEmpty ?? Engine.allCases
    }

    static func summary(_ d: RankReport, directory: String) -> String {
        var lines = ["\(d.pairs.count) pair(s) measured" + (d.notMeasured.isEmpty ? "" : ", \(d.notMeasured.count) not measured")]
        for p in d.pairs.sorted(by: { $0.sustainableRate > $1.sustainableRate }).prefix(10) {
            lines.append("  \(p.resolver): \(CapacityProbe.rate(p.sustainableRate)) q/s sustainable, limited by \(p.limitedBy.rawValue)")
        }
        for e in d.engines {
            if let plan = e.plan { lines.append("  \(plan.sentence): " + plan.uses.map { "\($0.resolver) at \(CapacityProbe.rate($0.rate)) q/s" }.joined(separator: ", ")) }
        }
        return lines.joined(separator: "\n") + "\nreport: \(directory)/rank.md"
    }
}

extension Array {
    fileprivate var nonEmpty: Self? { isEmpty ? nil : self }
}
