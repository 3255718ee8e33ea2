import Foundation
public import Results

extension PathReport {
    /// `path.md`: per resolver, loss up and down first (what decides FEC and resolver choice), then the rest.
    public func markdown() -> String {
        var out: [String] = []
        out.append("# Path quality \(run.id)")
        out.append("")
        if !run.complete {
            out.append("> **Incomplete run** (\(run.interruption ?? "interrupted")): the figures below cover only the probes whose fate was known when it stopped.")
            out.append("")
        }
        let size = "query of \(settings.uploadCharacters) payload characters, response payload \(settings.downloadBytes) bytes in \(settings.recordType)"
        out.append("- Domain \(settings.domain); \(settings.count) probes per resolver at \(Self.number(settings.rate)) /s; \(size)")
        out.append("- Tmax \(Self.number(settings.tmaxMs)) ms (later responses are lost and counted late, RFC 7680); one-way delays: \(settings.sharedClock ? "measured (shared clock)" : "not measured (clocks not shared)")")
        out.append("- Vantage \(run.vantage), seed \(run.seed), started \(run.startedAt)")
        let socketDrops = CheckedNumber.sum(resolvers.compactMap(\.stream.clientSocketDrops))
        if socketDrops == nil {
            out.append("")
            out.append("> **Warning**: the client's socket drops are \(CheckedNumber.invalid("resolvers[].stream.clientSocketDrops")).")
        } else if let socketDrops, socketDrops > 0 {
            out.append("")
            out.append("> **Warning**: the client's own sockets dropped \(socketDrops) responses (receive buffer full); down loss includes them.")
        } else if let drops = client.udpReceiveBufferErrors, drops > 0 {
            out.append("")
            out.append("> Note: \(drops) UDP datagrams were dropped for lack of receive buffer on this host (network namespace) during the run, none of them at the client's sockets.")
        }
        out.append("")
        // Only TCP/TLS/HTTPS resolvers: none of the UDP tables has a row, and their loss by direction is not defined.
        if resolvers.isEmpty, let streams = streamResolvers, !streams.isEmpty {
            return (out + Self.streamLines(streams) + [""]).joined(separator: "\n")
        }
        out.append("## Loss by direction")
        out.append("")
        out.append("| resolver | up | down | round trip | lost, direction unknown | late |")
        out.append("|---|---:|---:|---:|---:|---:|")
        for r in resolvers {
            out.append("| \(r.resolver) | \(Self.proportion(r.loss.up)) | \(Self.proportion(r.loss.down)) | \(Self.proportion(r.loss.roundTrip)) | \(r.counts.lostUnknown) | \(r.counts.late) |")
        }
        out.append("")
        out.append("Loss as percent with its Wilson 95 % interval and the number of probes it was measured on. FEC on responses helps only against **down** loss; **up** loss needs query redundancy or another resolver.")
        out.append("")
        out.append("## Delay, reordering, duplicates")
        out.append("")
        out.append("| resolver | RTT min / p50 / p90 / p99 / max ms | jitter ms | IPDV p50 / p99 ms | reordered | max extent | 3-reordered | duplicates up / down |")
        out.append("|---|---|---:|---|---:|---:|---:|---:|")
        for r in resolvers {
            let rtt = r.rttMs.p50 == nil ? (r.rttMs.reason ?? "-")
                : [r.rttMs.min, r.rttMs.p50, r.rttMs.p90, r.rttMs.p99, r.rttMs.max].map(Self.ms).joined(separator: " / ")
            let ipdv = r.ipdvMs.p50 == nil ? (r.ipdvMs.reason ?? "-") : "\(Self.ms(r.ipdvMs.p50)) / \(Self.ms(r.ipdvMs.p99))"
            let reordered = r.reordering.ratio.map { "\(r.counts.reordered) (\(Self.percent($0)))" } ?? (r.reordering.reason ?? "-")
            out.append("| \(r.resolver) | \(rtt) | \(r.jitterMs.map { Self.ms($0) } ?? (r.jitterReason ?? "-")) | \(ipdv) | \(reordered) | \(r.reordering.maxExtent.map(String.init) ?? "-") | \(r.reordering.threeReordered) | \(r.duplicates.up) / \(r.duplicates.down) |")
        }
        out.append("")
        out.append("## Loss bursts (Gilbert model, round trip)")
        out.append("")
        out.append("\(conventions.gilbertH).")
        out.append("")
        out.append("| resolver | p | r | h | model | mean burst | loss periods | period lengths | loss distances |")
        out.append("|---|---:|---:|---:|---|---:|---:|---|---|")
        for r in resolvers {
            let g = r.gilbert
            let pattern = r.lossPatterns.roundTrip
            let burst = pattern.meanPeriodLength.map { String(format: "%.2f", $0) } ?? "-"
            if g.model == nil {
                out.append("| \(r.resolver) | - | - | - | \(g.reason ?? "-") | \(burst) | \(pattern.periods) | \(Self.histogram(pattern.periodLengths)) | \(Self.histogram(pattern.distances)) |")
            } else {
                out.append("| \(r.resolver) | \(Self.fraction(g.p)) | \(Self.fraction(g.r)) | \(Self.fraction(g.h)) | \(g.model ?? "-") | \(burst) | \(pattern.periods) | \(Self.histogram(pattern.periodLengths)) | \(Self.histogram(pattern.distances)) |")
            }
        }
        out.append("")
        out.append("## Counts")
        out.append("")
        out.append("| resolver | sent | answered | lost up | lost down | unknown | late | other responses | drains answered | achieved rate /s |")
        out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in resolvers {
            let c = r.counts
            let rate = r.stream.achievedRate.map(Self.number) ?? "-"
            let absent = r.stream.responderAbsent ? " (responder absent)" : ""
            out.append("| \(r.resolver)\(absent) | \(c.sent) | \(c.answered) | \(c.lostUp) | \(c.lostDown) | \(c.lostUnknown) | \(c.late) | \(c.otherResponses) | \(r.stream.drainsAnswered)/\(r.stream.drainsSent) | \(rate) |")
        }
        out.append("")
        if let streams = streamResolvers, !streams.isEmpty { out += Self.streamLines(streams) + [""] }
        return out.joined(separator: "\n")
    }

    /// The section of the resolvers asked over TCP, TLS or HTTPS: what is measurable there.
    static func streamLines(_ streams: [StreamPathResult]) -> [String] {
        var out = ["## Over TCP, TLS and HTTPS", "", StreamPathResult.note, "",
                   "| resolver | transport | sent | answered | timed out [95 % CI] | REFUSED / SERVFAIL / other | offered /s | answered /s | RTT p50 / p90 / p99 / max ms | first query ms | connections set up / failed |",
                   "|---|---|---:|---:|---:|---|---:|---:|---|---:|---|"]
        for r in streams {
            let t = r.timeouts
            let timeouts = t.ratio.map { "\(r.timedOut) (\(percent($0)) [\(percent(t.ciLow ?? 0)), \(percent(t.ciHigh ?? 1))])" } ?? "\(r.timedOut)"
            let rtt = r.rttMs?.figures([\.p50, \.p90, \.p99, \.max]) { String(format: "%.2f", $0) } ?? "-"
            var first = r.firstQueryFailure ?? "-"
            if let ms = r.firstQueryMs { first = String(format: "%.2f", ms) }
            var connections = "\(r.connections.opened) / \(r.connections.failed)"
            if !r.connections.failures.isEmpty {
                connections += " (" + r.connections.failures.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + ")"
            } else if let last = r.lastConnectionFailure {
                connections += " (last: \(last))"
            }
            out.append("| \(r.resolver) | \(r.transport.rawValue) | \(r.sent) | \(r.answered) | \(timeouts) | \(r.refused) / \(r.servfail) / \(r.otherFailures) | \(number(r.offeredRate)) | \(number(r.answeredRate)) | \(rtt) | \(first) | \(connections) |")
        }
        return out
    }

    static func proportion(_ p: Proportion) -> String {
        guard let ratio = p.ratio, let low = p.ciLow, let high = p.ciHigh else { return p.reason ?? "-" }
        return "\(percent(ratio)) [\(percent(low)), \(percent(high))] n=\(p.samples)"
    }

    static func percent(_ v: Double) -> String { String(format: "%.2f %%", v * 100) }
    static func fraction(_ v: Double?) -> String { v.map { String(format: "%.4f", $0) } ?? "-" }
    static func ms(_ v: Double?) -> String { v.map { String(format: "%.2f", $0) } ?? "-" }
    static func number(_ v: Double) -> String {
        v == v.rounded() && abs(v) < 1e15 ? String(Int(v)) : String(format: "%.1f", v)
    }

    static func histogram(_ h: [String: Int]) -> String {
        guard !h.isEmpty else { return "-" }
        let sorted = h.sorted { (Int($0.key) ?? 0) < (Int($1.key) ?? 0) }
        let shown = sorted.prefix(8).map { "\($0.key):\($0.value)" }.joined(separator: " ")
        return sorted.count > 8 ? shown + " ..." : shown
    }
}
