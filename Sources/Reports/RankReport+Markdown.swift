import Base
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
                   "| resolver | transport | domain | sustainable q/s | first troubled q/s | limited by | loss at sustainable | RTT p50 / p90 / p99 ms | evidence |",
                   "|---|---|---|---:|---:|---|---:|---|---|"]
        for p in pairs {
            let loss = p.lossAtSustainable?.percentWithInterval { String(format: "%.1f", $0) } ?? "-"
            let rtt = p.rttAtSustainableMs?.figures(Percentiles.p50p90p99, ms) ?? "-"
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
