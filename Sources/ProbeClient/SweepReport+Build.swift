import Foundation
public import Results

extension SweepReport {
    /// `sweep.json` from what the sweep did (its MTU scans' figures are in scan.json).
    public init(result: SweepScanResult, configuration: SweepConfiguration, ranges: SweepRanges, issues: [ResolverList.Issue]) {
        var byOutcome: [String: Int] = [:]
        for a in result.answers { byOutcome[a.failure?.rawValue ?? "honest", default: 0] += 1 }
        self.init(
            seed: configuration.seed,
            ranges: ranges.blocks.map { "\(SweepRanges.describe($0.first))-\(SweepRanges.describe($0.last))" },
            rangeIssues: issues.map(\.description), addresses: ranges.total, planned: configuration.planned,
            sample: configuration.sample, rate: configuration.rate, packetsPerSecond: result.stats.packetsPerSecond,
            sentThisRun: result.stats.sent, sendErrors: result.stats.sendErrors, lastSendError: result.stats.lastSendError,
            swept: result.checkpoint.emitted, position: result.checkpoint.position,
            complete: result.checkpoint.emitted >= configuration.planned && !result.interrupted,
            runs: result.state.runs, resumedUnsettled: result.resumedUnsettled, answers: result.answers.count,
            answering: result.answers.filter(\.answering).count, answersByOutcome: byOutcome,
            unmatchedDatagrams: result.stats.unmatched, measured: result.pairs.count,
            accepted: result.pairs.filter(\.accepted).count, seconds: result.seconds, peakRSSKiB: Self.peakRSS(),
            peakRSSKiBBeforeReport: nil)
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
