import Foundation
public import EngineModels
public import ProbeClient
import Base

/// `rank.json`: each accepted pair's capacity (the knee of its paced query rate), the pairs ranked
/// by the data they move for each engine, and a plan for a target goodput (issue 19).
///
/// Definitions: loss is RFC 7680's (a query not answered within Tmax, the timeout), with a Wilson
/// 95 % interval; RTT is RFC 2681's round-trip delay, given as nearest-rank percentiles (RFC 2330
/// 6.6.1); the sustainable rate is RFC 2544 26.1's throughput (the highest offered rate whose step
/// lost no more than the allowed share); goodput is the engine's payload bytes one query carries
/// (its frame at the synced MTU, from the engine model) times the answered queries per second at
/// that rate: sustainable rate x (1 - loss ratio).
public struct RankReport: Codable, Sendable, Hashable {
    public static let schemaName = "tunnelprobe.rank/1"

    public var schema: String = RankReport.schemaName
    public var run: RunInfo
    /// The scan whose accepted pairs were measured.
    public var scan: RunInfo
    public var settings: CapacitySettings
    /// Every measured pair, in the order the scan lists them.
    public var pairs: [PairCapacity]
    /// Per engine: the pairs best first and, with `--target`, the plan.
    public var engines: [EngineRanking]
    /// Accepted pairs left unmeasured (the total budget ran out, or the run was stopped).
    public var notMeasured: [String]

    public init(run: RunInfo, scan: RunInfo, settings: CapacitySettings, pairs: [PairCapacity],
                engines: [EngineRanking], notMeasured: [String]) {
        self.run = run
        self.scan = scan
        self.settings = settings
        self.pairs = pairs
        self.engines = engines
        self.notMeasured = notMeasured
    }
}

/// One pair in one engine's units.
public struct RankedPair: Codable, Sendable, Hashable {
    public var rank: Int
    public var resolver: String
    public var domain: String
    public var sustainableRate: Double
    public var limitedBy: CapacityLimit
    public var lossRatio: Double
    public var rttP50Ms: Double?
    /// Engine payload bytes one query carries up (in its name) and down (in its answer).
    public var uploadBytesPerQuery: Int
    public var downloadBytesPerQuery: Int
    /// Expected goodput in bytes per second at the sustainable rate.
    public var uploadGoodput: Double
    public var downloadGoodput: Double
}

/// A set of resolvers that together move a target goodput.
public struct GoodputPlan: Codable, Sendable, Hashable {
    public struct Use: Codable, Sendable, Hashable {
        public var resolver: String
        public var domain: String
        /// The query rate to send it (at most its sustainable rate).
        public var rate: Double
        public var goodput: Double
    }

    /// "down" or "up".
    public var direction: String
    public var targetBytesPerSecond: Double
    public var reachable: Bool
    public var uses: [Use]
    public var totalGoodput: Double
    public var sentence: String
}

public struct EngineRanking: Codable, Sendable, Hashable {
    public var engine: Engine
    public var name: String
    /// The synced values (the engine's own units) the goodput rests on.
    public var upload: Int?
    public var download: Int?
    public var uploadSetting: String?
    public var downloadSetting: String?
    public var pairs: [RankedPair]
    public var plan: GoodputPlan?
    /// The engine's files with the resolvers best first (and, with a plan, the plan's under `plan/`).
    public var exports: [ExportFile]
    public var planExports: [ExportFile]?

    /// Ranks `capacities` for one engine from the scan's figures for it.
    public static func build(_ scan: EngineScan, capacities: [PairCapacity], target: (direction: String, bytesPerSecond: Double)?) -> EngineRanking {
        let model = EngineCatalog.model(for: scan.engine)
        var figures: [String: PairFigures] = [:]
        for f in scan.synced.usable { figures[f.resolver + " " + f.domain] = f }
        var ranked: [(RankedPair, PairFigures)] = []
        for c in capacities {
            guard let f = figures[c.resolver + " " + c.domain],
                  let up = f.upload.bytesPerQuery, let down = f.download.bytesPerQuery else { continue }
            let loss = c.lossAtSustainable?.ratio ?? 0
            let answered = c.sustainableRate * (1 - loss)
            ranked.append((RankedPair(rank: 0, resolver: c.resolver, domain: c.domain, sustainableRate: c.sustainableRate,
                                      limitedBy: c.limitedBy, lossRatio: loss, rttP50Ms: c.rttAtSustainableMs?.p50,
                                      uploadBytesPerQuery: up, downloadBytesPerQuery: down,
                                      uploadGoodput: answered * Double(up), downloadGoodput: answered * Double(down)), f))
        }
        let down = target?.direction != "up"
        ranked.sort { a, b in
            let (x, y) = down ? (a.0.downloadGoodput, b.0.downloadGoodput) : (a.0.uploadGoodput, b.0.uploadGoodput)
            return x != y ? x > y : (a.0.resolver, a.0.domain) < (b.0.resolver, b.0.domain)
        }
        for i in ranked.indices { ranked[i].0.rank = i + 1 }
        let useful = ranked.filter { $0.0.sustainableRate > 0 }
        func files(_ chosen: [PairFigures]) -> [ExportFile] {
            model.exports(SyncedFigures(engine: scan.engine, upload: scan.synced.upload, download: scan.synced.download,
                                        usable: chosen, rejected: []))
        }
        var ranking = EngineRanking(engine: scan.engine, name: scan.engine.displayName, upload: scan.synced.upload,
                                    download: scan.synced.download, uploadSetting: scan.synced.usable.first?.upload.setting,
                                    downloadSetting: scan.synced.usable.first?.download.setting,
                                    pairs: ranked.map(\.0), plan: nil, exports: files(useful.map(\.1)))
        if let target {
            let plan = Self.plan(useful.map(\.0), direction: target.direction, target: target.bytesPerSecond, engine: scan.engine.displayName)
            ranking.plan = plan
            let chosen = Set(plan.uses.map { $0.resolver + " " + $0.domain })
            ranking.planExports = files(useful.map(\.1).filter { chosen.contains($0.resolver + " " + $0.domain) })
        }
        return ranking
    }

    /// The fewest pairs, best first, whose goodput adds up to `target`; the last one sent only as
    /// fast as the rest of the target needs.
    static func plan(_ ranked: [RankedPair], direction: String, target: Double, engine: String) -> GoodputPlan {
        var uses: [GoodputPlan.Use] = []
        var total = 0.0
        for p in ranked where total < target {
            let goodput = direction == "up" ? p.uploadGoodput : p.downloadGoodput
            guard goodput > 0 else { continue }
            let needed = target - total
            let share = min(1, needed / goodput)
            uses.append(.init(resolver: p.resolver, domain: p.domain, rate: p.sustainableRate * share, goodput: goodput * share))
            total += goodput * share
        }
        let reachable = total >= target * 0.999
        let kb = { (v: Double) in String(format: "%.1f kB/s", v / 1000) }
        let sentence = reachable
            ? "to move \(kb(target)) \(direction) with \(engine) you need these \(uses.count) resolver(s) at these rates"
            : "\(kb(target)) \(direction) with \(engine) is out of reach: all \(uses.count) measured resolver(s) together move \(kb(total))"
        return GoodputPlan(direction: direction, targetBytesPerSecond: target, reachable: reachable, uses: uses,
                           totalGoodput: total, sentence: sentence)
    }
}

extension RankReport {
    /// Every engine's export files as (path in the report directory, text): `exports/<engine>/` with
    /// the resolvers best first, `exports/<engine>/plan/` with the plan's.
    public func exportFiles() -> [(String, String)] {
        engines.flatMap { e in
            e.exports.map { ("exports/\(e.engine.rawValue)/\($0.name)", $0.text) }
                + (e.planExports ?? []).map { ("exports/\(e.engine.rawValue)/plan/\($0.name)", $0.text) }
        }
    }

    public func markdown() -> String {
        func r(_ v: Double) -> String { v >= 100 ? HTML.formatFixed(v, decimals: 0) : String(format: "%.1f", v) }
        func ms(_ v: Double?) -> String { v.map { String(format: "%.1f", $0) } ?? "-" }
        var out = ["# Resolver capacity and ranking", "",
                   "Run \(run.id) over scan \(scan.id); seed \(run.seed). Each accepted pair got paced tunnel-shaped queries (full-size names, full-size TXT answers) at rising rates, \(r(settings.startRate)) q/s times \(settings.growth) per \(r(settings.stepSeconds)) s step up to \(r(settings.ceiling)) q/s, until loss or delay said the resolver is limiting; the knee was then narrowed by bisection (RFC 2544 26.1).",
                   "Loss: RFC 7680 (Tmax \(r(settings.timeoutSeconds * 1000)) ms), Wilson 95 % interval. RTT: RFC 2681 round-trip delay, nearest-rank percentiles. A step is troubled above \(r(settings.maxFailureRatio * 100)) % failed queries (at least \(settings.minFailures)) or a median RTT above twice the first step's (at least \(r(settings.delayMarginMs)) ms more).", "",
                   "## Capacity per pair", "",
                   "| resolver | transport | domain | sustainable q/s | first troubled q/s | limited by | loss at sustainable | RTT p50 / p90 / p99 ms | evidence |",
                   "|---|---|---|---:|---:|---|---:|---|---|"]
        for p in pairs {
            let loss = p.lossAtSustainable.map { String(format: "%.1f %% [%.1f, %.1f]", $0.ratio * 100, $0.low * 100, $0.high * 100) } ?? "-"
            let rtt = p.rttAtSustainableMs.map { "\(ms($0.p50)) / \(ms($0.p90)) / \(ms($0.p99))" } ?? "-"
            out.append("| \(p.resolver) | \((p.transport ?? .udp).rawValue) | \(p.domain) | \(r(p.sustainableRate)) | \(p.troubledRate.map(r) ?? "-") | \(p.limitedBy.rawValue) | \(loss) | \(rtt) | \(p.evidence) |")
        }
        out += transportLines(ms: ms, rate: r)
        if !notMeasured.isEmpty { out += ["", "Not measured (budget or stop): \(notMeasured.joined(separator: ", "))"] }
        for e in engines {
            out += ["", "## \(e.name)", "",
                    "Synced \(e.uploadSetting ?? "upload") \(e.upload.map(String.init) ?? "-"), \(e.downloadSetting ?? "download") \(e.download.map(String.init) ?? "-"); goodput = sustainable rate x (1 - loss) x payload bytes per query.", "",
                    "| rank | resolver | q/s | up B/query | down B/query | up goodput B/s | down goodput B/s |",
                    "|---:|---|---:|---:|---:|---:|---:|"]
            for p in e.pairs {
                out.append("| \(p.rank) | \(p.resolver) | \(r(p.sustainableRate)) | \(p.uploadBytesPerQuery) | \(p.downloadBytesPerQuery) | \(r(p.uploadGoodput)) | \(r(p.downloadGoodput)) |")
            }
            if let plan = e.plan {
                out += ["", "**Plan:** \(plan.sentence).", ""]
                for u in plan.uses { out.append("- \(u.resolver) (\(u.domain)) at \(r(u.rate)) q/s: \(r(u.goodput)) B/s") }
            }
            if !e.exports.isEmpty { out += ["", "Files, best first: " + e.exports.map { "exports/\(e.engine.rawValue)/\($0.name)" }.joined(separator: ", ")] }
        }
        return out.joined(separator: "\n") + "\n"
    }
}

extension RankReport {
    public static let transportNote = "Medians over the pairs (lower median). Over TCP, TLS and HTTPS the queries are pipelined on open connections; the first query of each pair opened them (its RTT includes the set-up: TCP, TLS handshake, HTTP/2 settings). The kernel retransmits lost segments there, so a query not answered within Tmax is a timeout, not a datagram lost on the path."

    /// Per transport: the pairs measured over it, their median sustainable rate and median RTT, and
    /// for TCP, TLS and HTTPS the first query's RTT (connection set-up included) and the
    /// connections set up and failed. Empty when every pair went over UDP.
    func transportRows(ms: (Double?) -> String, rate: (Double) -> String) -> [[String]] {
        let kinds = DNSTransport.allCases.filter { t in pairs.contains { ($0.transport ?? .udp) == t } }
        guard kinds.contains(where: \.isStream) else { return [] }
        func median(_ v: [Double]) -> Double? {
            let s = v.sorted()
            return s.isEmpty ? nil : s[(s.count - 1) / 2]
        }
        return kinds.map { t in
            let these = pairs.filter { ($0.transport ?? .udp) == t }
            let sustained = median(these.map(\.sustainableRate)).map(rate) ?? "-"
            let rtt = ms(median(these.compactMap { $0.rttAtSustainableMs?.p50 }))
            let first = t.isStream ? ms(median(these.compactMap(\.firstQueryMs))) : "-"
            var connections = "-"
            if t.isStream {
                let opened = these.compactMap { $0.connections?.opened }.reduce(0, +)
                let failed = these.compactMap { $0.connections?.failed }.reduce(0, +)
                var names: [String: Int] = [:]
                for c in these.compactMap(\.connections) { names.merge(c.failures, uniquingKeysWith: +) }
                connections = "\(opened) / \(failed)" + (names.isEmpty ? "" : " (" + names.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + ")")
            }
            return [t.rawValue, "\(these.count)", sustained, rtt, first, connections]
        }
    }

    func transportLines(ms: (Double?) -> String, rate: (Double) -> String) -> [String] {
        let rows = transportRows(ms: ms, rate: rate)
        guard !rows.isEmpty else { return [] }
        return ["", "## Per transport", "", Self.transportNote, "",
                "| transport | pairs | sustainable q/s | RTT p50 ms | first query ms | connections set up / failed |",
                "|---|---:|---:|---:|---:|---|"] + rows.map { "| " + $0.joined(separator: " | ") + " |" }
    }
}
