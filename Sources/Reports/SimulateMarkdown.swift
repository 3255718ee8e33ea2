import Foundation
public import Results

extension SimulateReport {
    /// The overhead cap as the settings line states it.
    var budgetSetting: String {
        settings.overheadBudget.map { "\(Self.num($0)) bytes on the wire per useful byte at most (set with --overhead-budget)" }
            ?? "none (the rule chooses on stalls, in-order delay and goodput, which already pay for overhead)"
    }

    /// Says when the user's overhead budget changed the recommendation; nil when it did not.
    func budgetNote(_ r: Recommendation) -> String? {
        guard let free = r.withoutBudget, let budget = settings.overheadBudget else { return nil }
        return "Your overhead budget of \(Self.num(budget)) changed the answer: without it the rule picks \(free)."
    }

    /// `simulate.md`: the comparison table first, the recommendation, then the ARQ and ISA-L details.
    public func markdown() -> String {
        var out: [String] = []
        out.append("# FEC + ARQ simulation \(run.id)")
        out.append("")
        if !run.complete {
            out.append("> **Incomplete run** (\(run.interruption ?? "interrupted")): only the levels that finished are shown.")
            out.append("")
        }
        if input.kind == "fates" {
            out.append("- Input: fates file `\(input.file ?? "-")` (sha256 \(input.sha256.map { String($0.prefix(16)) } ?? "-")…), \(input.fatesSource ?? "")")
            out.append("- Resolver \(input.resolver ?? "-")")
        } else {
            out.append("- Input: model `\(input.model ?? "-")`, mean loss \(Self.percent(input.modelLoss))")
        }
        for s in input.streams {
            var line = "- \(s.direction): data on `\(s.data)`"
            if input.kind == "fates" { line += " (\(s.dataPackets) fates, loss \(Self.percent(s.dataLoss)))" }
            line += ", feedback on `\(s.feedback)`"
            if let note = s.feedbackNote { line += " — \(note)" }
            if s.delaysFilled > 0 { line += "; \(s.delaysFilled) delivered fates without a delay got the stream's median" }
            out.append(line)
        }
        out.append("- \(input.runs) run(s) of \(input.opportunitiesPerRun) channel opportunities, seed \(input.seed); traffic `\(settings.traffic)`, \(settings.symbolSize)-byte symbols, \(settings.headerBytes)-byte header" + (settings.frameSource.map { " (\($0))" } ?? ""))
        out.append("- Overhead budget: \(budgetSetting)")
        let a = settings.arq
        if a.enabled {
            out.append("- ARQ: window \(a.window), retry limit \(a.retryLimit), RTO \(Self.num(a.initialRTOMs)) ms initial in [\(Self.num(a.minRTOMs)), \(Self.num(a.maxRTOMs))] ms, backoff x\(Self.num(a.backoffFactor)), NACK after \(Self.num(a.nackDelayMs)) ms (repeat \(Self.num(a.nackRepeatMs)) ms, max gap \(a.nackMaxGap)), ACK interval \(Self.num(a.ackIntervalMs)) ms")
        } else {
            out.append("- ARQ: off (FEC alone)")
        }
        out.append("")
        for direction in orderedDirections {
            let rows = levels.filter { $0.direction == direction }
            out.append("## \(direction.capitalized)")
            out.append("")
            out.append("| level | k+m nominal → formed | residual loss, FEC alone | residual loss, FEC + ARQ | stall total ms | longest stall ms | in-order p50 / p99 ms | goodput B/s | overhead |")
            out.append("|---|---|---:|---:|---:|---:|---:|---:|---:|")
            for r in rows {
                let ci = r.clusterIntervals
                out.append("| \(r.level) | \(Self.formed(r)) | \(Self.rate(r.residualLossFEC, ci?.residualLossFEC.map { Interval(low: $0.low, high: $0.high, count: $0.count, of: $0.of) } ?? r.intervals.residualLossFEC)) | \(Self.rate(r.residualLoss, ci?.residualLoss.map { Interval(low: $0.low, high: $0.high, count: $0.count, of: $0.of) } ?? r.intervals.residualLoss)) | \(Self.num(r.stallMs.totalMs.rounded())) | \(Self.num(r.stallMs.max.rounded())) | \(Self.ms(r.inOrderDelayMs.p50)) / \(Self.ms(r.inOrderDelayMs.p99)) | \(r.goodputBytesPerSecond.map { String(format: "%.0f", $0) } ?? "n/a") | \(r.overhead.map { String(format: "%.3f", $0) } ?? "n/a") |")
            }
            out.append("")
            if let rec = recommendations.first(where: { $0.direction == direction }) {
                out.append("**Recommendation: \(rec.level).** \(rec.reason)")
                out.append("")
                if let note = budgetNote(rec) {
                    out.append("> **\(note)**")
                    out.append("")
                }
            }
            if let rule = recommendationRule {
                out.append("Rule: \(rule)")
                out.append("")
            }
            out.append("| level | groups formed k'+m' (groups) | groups failed, FEC alone | delay p50 / p99 ms (first arrival) |")
            out.append("|---|---|---:|---:|")
            for r in rows {
                let sizes = r.groupsFormed.map { g in g.sizes.map { "\($0.k)+\($0.m) (\($0.groups))" }.joined(separator: ", ") } ?? "-"
                let failed = r.groups.total > 0 ? "\(r.groups.failed) / \(r.groups.total) \(Self.bracket(r.clusterIntervals?.groupFailure))" : "-"
                out.append("| \(r.level) | \(sizes) | \(failed) | \(Self.ms(r.delayMs.p50)) / \(Self.ms(r.delayMs.p99)) |")
            }
            out.append("")
            if rows.contains(where: { $0.channel != nil }) {
                out.append("| level | channel: datagrams, loss | loss periods (mean length) | lengths 1, 2, 3, 4-8, 9+ | Gilbert fit (2-state p, r; with h) |")
                out.append("|---|---:|---:|---|---|")
                for r in rows {
                    guard let c = r.channel else { continue }
                    func sum(_ range: ClosedRange<Int>) -> String {
                        CheckedNumber.sum(c.lossPeriodLengths.filter { range.contains($0.length) }.map(\.count)).map(String.init)
                            ?? CheckedNumber.invalid("channel.lossPeriodLengths[].count")
                    }
                    let fit = c.gilbert.twoState.map { String(format: "p %.4f, r %.3f (loss %.2f %%, burst %.2f)", $0.p, $0.r, $0.loss * 100, $0.meanBurst) } ?? (c.gilbert.twoStateReason ?? "-")
                    let withH = c.gilbert.withH.map { String(format: "; p %.4f, r %.3f, h %.3f", $0.p, $0.r, $0.h) } ?? ""
                    out.append("| \(r.level) | \(c.datagrams), \(Self.percent(c.loss)) | \(c.lossPeriods) (\(c.meanLossPeriod.map { String(format: "%.2f", $0) } ?? "n/a")) | \(sum(1...1)), \(sum(2...2)), \(sum(3...3)), \(sum(4...8)), \(sum(9...10_000)) | \(fit)\(withH) |")
                }
                if input.kind == "model" {
                    out.append("")
                    out.append("Model nominal: loss \(Self.percent(input.modelLoss)), mean loss period \(input.modelMeanBurst.map { String(format: "%.2f", $0) } ?? "n/a") packets.")
                }
                out.append("")
            }
            out.append("| level | delay p90 / p99.9 / max ms | in-order p99 ms | stalls (total ms) | retransmissions (NACK / RTO / spurious) | feedback msgs (lost) | flushed groups | repair used / sent | goodput B/s | ISA-L groups (encode / decode us) |")
            out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
            for r in rows {
                let isal = r.isal.groupsVerified > 0
                    ? "\(r.isal.groupsVerified)\(r.isal.mismatches > 0 ? " (\(r.isal.mismatches) MISMATCH)" : "") (\(Self.num(r.isal.encodeMicrosPerGroup)) / \(Self.num(r.isal.decodeMicrosPerGroup)))"
                    : "-"
                out.append("| \(r.level) | \(Self.ms(r.delayMs.p90)) / \(Self.ms(r.delayMs.p999)) / \(Self.ms(r.delayMs.max)) | \(Self.ms(r.inOrderDelayMs.p99)) | \(r.stallMs.count) (\(Self.num(r.stallMs.totalMs))) | \(r.retransmissions.total) (\(r.retransmissions.byNACK) / \(r.retransmissions.byRTO) / \(r.retransmissions.spurious)) | \(r.feedback.messages) (\(r.feedback.lost)) | \(r.groups.closedByFlushTimeout) | \(r.groups.repairUsed) / \(r.groups.repairSent) | \(r.goodputBytesPerSecond.map { String(format: "%.0f", $0) } ?? "n/a") | \(isal) |")
            }
            out.append("")
            let notes = rows.flatMap { r in r.notes.map { "\(r.level): \($0)" } }
            if !notes.isEmpty {
                for n in notes { out.append("- \(n)") }
                out.append("")
            }
        }
        out.append("Residual loss is shown with its 95 % interval counting lost packets by the group they fail in (Korn-Graubard: Clopper-Pearson on the originals divided by the design effect; without FEC, blocks of 16 originals), groups failed with the Clopper-Pearson interval; simulate.json also has the per-run (replication) intervals. Stalls: periods in which data waits behind a missing packet, summed over all runs. FEC alone counts first transmissions and repair symbols only; overhead is bytes on the wire (data, repair, retransmissions, ACK/NACK, headers) per useful byte. ISA-L: \(isal.groupsVerified) sampled groups of \(isal.symbolSize)-byte symbols encoded and rebuilt through \(isal.library), \(isal.mismatches) mismatch(es).")
        return out.joined(separator: "\n") + "\n"
    }

    /// `12+3 → 10.2+3.0` when the groups formed differ from the label.
    static func formed(_ r: Level) -> String {
        guard r.k > 0 else { return "-" }
        guard let g = r.groupsFormed, let mk = g.meanK, let mm = g.meanM else { return "\(r.k)+\(r.m)" }
        return String(format: "%d+%d → %.1f+%.1f", r.k, r.m, mk, mm)
    }

    static func bracket(_ ci: ClusterInterval?) -> String {
        guard let ci else { return "" }
        return "[\(sci(ci.low)), \(sci(ci.high))]"
    }

    private var orderedDirections: [String] {
        var seen: [String] = []
        for l in levels where !seen.contains(l.direction) { seen.append(l.direction) }
        return seen
    }

    static func percent(_ x: Double?) -> String {
        guard let x else { return "n/a" }
        return String(format: "%.2f %%", x * 100)
    }

    static func rate(_ x: Double?, _ ci: Interval?) -> String {
        guard let x else { return "n/a" }
        guard let ci else { return sci(x) }
        return "\(sci(x)) [\(sci(ci.low)), \(sci(ci.high))]"
    }

    static func sci(_ x: Double) -> String {
        if x == 0 { return "0" }
        return x >= 0.001 ? String(format: "%.4f", x) : String(format: "%.1e", x)
    }

    static func ms(_ x: Double?) -> String { x.map { String(format: "%.1f", $0) } ?? "n/a" }

    static func num(_ x: Double?) -> String {
        guard let x else { return "n/a" }
        return x == x.rounded() && abs(x) < 1e9 ? String(Int(x)) : String(format: "%.2f", x)
    }
}
