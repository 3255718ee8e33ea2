public import Results
extension ScanReport {
    /// `scan.md`: what a person reads first, accepted pairs at the top.
    public func markdown() -> String {
        var out: [String] = []
        out.append("# Resolver scan \(run.id)")
        out.append("")
        if !run.complete {
            out.append("> **Incomplete run** (\(run.interruption ?? "interrupted")): the figures below cover only the pairs that finished.")
            out.append("")
        }
        out.append("- Domains: \(settings.domains.joined(separator: ", "))")
        out.append("- Resolvers: \(input.resolvers); pairs tested: \(summary.pairs) of \(CheckedNumber.sum([summary.pairs, summary.notTested]).map(String.init) ?? CheckedNumber.invalid("summary.notTested")); accepted: **\(summary.accepted)**, rejected: \(summary.rejected)")
        out.append("- Encoding \(settings.encoding), record type \((settings.recordTypes ?? [settings.recordType]).joined(separator: ", ")), timeout \(settings.timeoutMs) ms, \(settings.attempts) attempts per size, \(settings.confirmProbes) confirmation probes per direction")
        out.append("- Vantage \(run.vantage), seed \(run.seed), \(summary.queries) queries in \(String(format: "%.1f", summary.durationSeconds)) s, started \(run.startedAt)")
        out.append("")
        if let server { out += server.markdown() }
        out.append("## Synced MTU (minimum over accepted pairs within the loss threshold)")
        out.append("")
        if let up = synced.upload, let down = synced.download {
            out.append("| direction | payload bytes | on the wire |")
            out.append("|---|---:|---|")
            out.append("| upload | \(up) | QNAME of \(synced.uploadQnameChars.map(String.init) ?? "-") characters |")
            out.append("| download | \(down) | response of \(synced.downloadResponseSize.map(String.init) ?? "-") bytes |")
        } else {
            out.append("No pair was accepted.")
        }
        if let optimized {
            out.append("")
            out.append("Optimizer (not applied): upload \(optimized.upload), download \(optimized.download) by dropping \(optimized.dropped.count) pair(s). Rule: \(optimized.rule).")
        }
        out.append("")
        out += engineMarkdown()
        if let endToEnd { out += endToEnd.markdown() }
        let accepted = pairs.filter(\.accepted).sorted {
            ($0.download?.bytes ?? 0, $0.upload?.bytes ?? 0) > ($1.download?.bytes ?? 0, $1.upload?.bytes ?? 0)
        }
        if !accepted.isEmpty {
            out.append("## Accepted pairs")
            out.append("")
            out.append("| resolver | transport | domain | up bytes | QNAME chars | down bytes | response bytes | down limited by | limiting leg | RTT ms | confirmed | loss |")
            out.append("|---|---|---|---:|---:|---:|---:|---|---|---:|---:|---|")
            for p in accepted {
                let conf = p.confirmation.map { "\($0.succeeded)/\($0.sent)" } ?? "-"
                let loss = p.lossExceeded == true ? "**\(p.lossText), above the threshold**" : p.lossText
                out.append("| \(p.resolver) | \((p.transport ?? .udp).rawValue) | \(p.domain) | \(p.upload?.bytes ?? 0) | \(p.upload?.qnameChars ?? 0) | \(p.download?.bytes ?? 0) | \(p.download?.responseSize ?? 0) | \(p.download?.limitText ?? "-") | \(p.download?.limitingLeg?.rawValue ?? "-") | \(p.rttMs.map { String(format: "%.1f", $0) } ?? "-") | \(conf) | \(loss) |")
            }
            out.append("")
            let lossy = accepted.filter { $0.lossExceeded == true }
            if !lossy.isEmpty, let maxLoss = settings.maxLoss {
                out.append("> **\(lossy.count) pair(s) lost more than \(String(format: "%.0f", maxLoss * 100)) % of their confirmation probes** (`--max-loss`): they are left out of the synced MTU and of the engine figures and exports.")
                out.append("")
            }
        }
        let rejected = pairs.filter { !$0.accepted }
        if !rejected.isEmpty {
            out.append("## Rejected pairs")
            out.append("")
            out.append("| reason | pairs |")
            out.append("|---|---:|")
            for (reason, n) in summary.rejectedBy.sorted(by: { ($0.value, $1.key) > ($1.value, $0.key) }) {
                out.append("| \(reason) | \(n) |")
            }
            out.append("")
            out.append("| resolver | domain | reason |")
            out.append("|---|---|---|")
            for p in rejected.prefix(200) { out.append("| \(p.resolver) | \(p.domain) | \(p.reason ?? "-") |") }
            if rejected.count > 200 { out.append("| ... | | \(rejected.count - 200) more in scan.json |") }
            out.append("")
        }
        if !input.listIssues.isEmpty {
            out.append("## Resolver list lines skipped")
            out.append("")
            for issue in input.listIssues.prefix(50) { out.append("- \(issue)") }
            out.append("")
        }
        let upDefinition = server == nil
            ? "payload bytes the longest intact QNAME carries in \(settings.encoding) (RFC 1035 2.3.4: 63-octet labels, 253-character names), tunnelprobe's own probe units, not an engine setting (the engine table gives those)"
            : "the largest MTU_UP_REQ payload the server received whole through the pair (MasterDnsVPN's upload MTU; its name must stay within 253 characters, RFC 1035 2.3.4)"
        out.append("Definitions: upload bytes = \(upDefinition); download bytes = payload bytes in one \(settings.recordType) response; response bytes = size of the largest DNS message that arrived intact; RTT = median over the pair's answered probes; loss = confirmation probes without an answer within the timeout (RFC 7680 2.4), with the Wilson 95 % interval; down limited by = what failed just above the chosen size (TC: the resolver's limit toward the client; upstream EDNS: the size the resolver advertises upstream, seen by the responder in the query's OPT record).")
        return out.joined(separator: "\n") + "\n"
    }
}
