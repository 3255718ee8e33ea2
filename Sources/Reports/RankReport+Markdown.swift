import Foundation
public import Results

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
                   "| resolver | domain | sustainable q/s | first troubled q/s | limited by | loss at sustainable | RTT p50 / p90 / p99 ms | evidence |",
                   "|---|---|---:|---:|---|---:|---|---|"]
        for p in pairs {
            let loss = p.lossAtSustainable.map { String(format: "%.1f %% [%.1f, %.1f]", $0.ratio * 100, $0.low * 100, $0.high * 100) } ?? "-"
            let rtt = p.rttAtSustainableMs.map { "\(ms($0.p50)) / \(ms($0.p90)) / \(ms($0.p99))" } ?? "-"
            out.append("| \(p.resolver) | \(p.domain) | \(r(p.sustainableRate)) | \(p.troubledRate.map(r) ?? "-") | \(p.limitedBy.rawValue) | \(loss) | \(rtt) | \(p.evidence) |")
        }
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
