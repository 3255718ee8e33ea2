public import Base
import Foundation
public import Results

extension EngineRanking {
    /// Ranks `capacities` for one engine from the scan's figures for it.
    public static func build(_ scan: EngineScan, capacities: [PairCapacity], target: (direction: Direction, bytesPerSecond: Double)?) -> EngineRanking {
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
        let down = target?.direction != .up
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
    static func plan(_ ranked: [RankedPair], direction: Direction, target: Double, engine: String) -> GoodputPlan {
        var uses: [GoodputPlan.Use] = []
        var total = 0.0
        for p in ranked where total < target {
            let goodput = direction == .up ? p.uploadGoodput : p.downloadGoodput
            guard goodput > 0 else { continue }
            let needed = target - total
            let share = min(1, needed / goodput)
            uses.append(.init(resolver: p.resolver, domain: p.domain, rate: p.sustainableRate * share, goodput: goodput * share))
            total += goodput * share
        }
        let reachable = total >= target * 0.999
        let kb = { (v: Double) in String(format: "%.1f kB/s", v / 1000) }
        let sentence = reachable
            ? "to move \(kb(target)) \(direction.rawValue) with \(engine) you need these \(uses.count) resolver(s) at these rates"
            : "\(kb(target)) \(direction.rawValue) with \(engine) is out of reach: all \(uses.count) measured resolver(s) together move \(kb(total))"
        return GoodputPlan(direction: direction, targetBytesPerSecond: target, reachable: reachable, uses: uses,
                           totalGoodput: total, sentence: sentence)
    }
}
