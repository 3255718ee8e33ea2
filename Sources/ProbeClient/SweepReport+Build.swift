import Foundation
public import Results

extension SweepReport {
    /// `sweep.json` from what the sweep did (its MTU scans' figures are in scan.json).
    public init(result: SweepScanResult, configuration: SweepConfiguration, ranges: SweepRanges, issues: [ResolverList.Issue]) {
        var byOutcome: [String: Int] = [:]
        for a in result.answers { byOutcome[a.failure?.rawValue ?? "honest", default: 0] += 1 }
        let state = result.state
        self.init(
            seed: configuration.seed,
            ranges: ranges.blocks.map { "\(SweepRanges.describe($0.first))-\(SweepRanges.describe($0.last))" }
                + ranges.blocks6.map { "\(SweepRanges.describe6($0.first))-\(SweepRanges.describe6($0.last))" },
            rangeIssues: issues.map(\.description), addresses: ranges.total, planned: configuration.planned,
            sample: configuration.sample, rate: configuration.rate, packetsPerSecond: result.stats.packetsPerSecond,
            sentThisRun: result.stats.sent, sendErrors: result.stats.sendErrors, lastSendError: result.stats.lastSendError,
            swept: state.passSent?.first ?? result.checkpoint.emitted, position: result.checkpoint.position,
            complete: result.complete && !result.interrupted,
            runs: state.runs, resumedUnsettled: result.resumedUnsettled, answers: result.answers.count,
            answering: result.answers.filter(\.answering).count, answersByOutcome: byOutcome,
            unmatchedDatagrams: result.stats.unmatched, measured: result.pairs.count,
            accepted: result.pairs.filter(\.accepted).count, seconds: result.seconds, peakRSSKiB: Self.peakRSS(),
            peakRSSKiBBeforeReport: nil)
        let currentPass = max(1, state.pass ?? 1)
        shard = configuration.shard == .whole ? nil : configuration.shard
        rangesDigest = state.rangesDigest
        var figures: [Pass] = []
        for k in 1...max(1, state.passes ?? 1) {
            let sent = state.passSent ?? []
            let probed = k <= sent.count ? sent[k - 1] : (k == currentPass ? result.checkpoint.emitted : 0)
            let added = result.answers.filter { ($0.pass ?? 1) == k }
            figures.append(Pass(pass: k, probed: probed, newAnswers: added.count, newAnswering: added.filter(\.answering).count,
                                complete: k <= sent.count))
        }
        passes = figures
        if let prefix = configuration.neighbourPrefix {
            let found = result.answers.filter { $0.viaNeighbour == true && $0.answering }
            let permutation = configuration.permutation
            let sampleEnd = state.firstPassEnd ?? (currentPass == 1 ? result.checkpoint.position : permutation.domain)
            let beyond = configuration.sample == nil ? 0 : found.filter { answer in
                guard let v = SweepRanges.parseIPv4(answer.address[...]), let index = ranges.index(of: v) else { return false }
                return permutation.position(of: index) >= sampleEnd
            }.count
            neighbours = Neighbours(prefixLength: prefix, probesThisRun: result.stats.neighbourProbes,
                                    foundAsNeighbours: found.count, beyondSample: beyond)
            let cut = result.checkpoint.cutShort(mask: Sweeper.mask(prefix: prefix))
            if !cut.isEmpty {
                neighbours?.cutShort = cut.map { "\(SweepRanges.describe($0))/\(prefix)" }
                neighbours?.unprobedNeighbours = result.checkpoint.pendingNeighbours?.count
            }
            neighbours?.unexpandedAnswers = result.checkpoint.unexpanded?.count
        }
    }

    /// Peak resident memory of this process (VmHWM, /proc/self/status), KiB.
    public static func peakRSS() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return Int(line.split(separator: " ").dropFirst().first ?? "")
        }
        return nil
    }
}
