import Base
import FEC
public import LinkSim

extension SimulateReport {
    /// `simulate.json` from what the simulator measured: the one place where simulation figures become
    /// report fields (rates with their Wilson intervals, percentiles, notes).
    public init(_ result: SimulationResult, run: RunInfo) {
        let request = result.request
        var input: Input
        let streams = result.streams.map {
            StreamUse(direction: $0.direction.rawValue, data: $0.data.description, dataPackets: $0.dataPackets, dataLoss: $0.dataLoss,
                      feedback: $0.feedback.description, feedbackNote: $0.feedbackNote, delaysFilled: $0.delaysFilled)
        }
        switch result.source {
        case let .fates(file, sha256, description, resolver):
            input = Input(kind: "fates", file: file, sha256: sha256, fatesSource: description, resolver: resolver, streams: streams,
                          seed: request.seed, runs: request.runs, opportunitiesPerRun: result.opportunitiesPerRun)
        case let .model(model):
            input = Input(kind: "model", streams: streams, model: model.description, modelLoss: model.meanLoss, seed: request.seed,
                          runs: request.runs, opportunitiesPerRun: result.opportunitiesPerRun)
        }
        let a = request.arq
        let settings = Settings(
            direction: request.direction.rawValue, traffic: request.traffic.description, symbolSize: request.symbolSize,
            headerBytes: request.headerBytes, feedbackEntryBytes: request.feedbackEntryBytes,
            overheadBudget: request.overheadBudget, verifyGroupsPerRun: request.verifyGroups,
            arq: ARQ(enabled: a.enabled, window: a.window, retryLimit: a.retryLimit, initialRTOMs: a.initialRTOMs,
                     minRTOMs: a.minRTOMs, maxRTOMs: a.maxRTOMs, backoffFactor: a.backoffFactor, nackDelayMs: a.nackDelayMs,
                     nackRepeatMs: a.nackRepeatMs, nackMaxGap: a.nackMaxGap, ackIntervalMs: a.ackIntervalMs))
        var settingsWithFrames = settings
        settingsWithFrames.frameSource = request.frameSource
        self.init(
            run: run, input: input, settings: settingsWithFrames,
            levels: result.outcomes.map { Level($0, arq: a.enabled) },
            recommendations: result.recommendations.map {
                Recommendation(direction: $0.direction.rawValue, level: $0.level, withinBudget: $0.withinBudget, reason: $0.reason)
            },
            isal: ISAL(library: "Intel ISA-L \(ReedSolomon.libraryVersion)", groupsVerified: result.groupsVerified,
                       mismatches: result.verificationMismatches, symbolSize: request.symbolSize))
    }
}

extension SimulateReport.Level {
    init(_ outcome: SimulationResult.Outcome, arq: Bool) {
        let t = outcome.metrics
        let level = outcome.level
        var notes: [String] = []
        let n = t.originals
        func rate(_ c: Int, _ of: Int) -> Double? { of > 0 ? Double(c) / Double(of) : nil }
        if n == 0 { notes.append("no packet was offered: every rate is null") }
        let overhead = outcome.overhead
        if overhead == nil && n > 0 { notes.append("overhead: nothing was delivered") }
        let delay = SimulateReport.Percentiles(outcome.delay)
        if delay.samples > 0 && delay.samples < 100 { notes.append("delay p99 needs at least 100 delivered packets") }
        if !level.isEnabled { notes.append("no FEC: residual loss after FEC alone is the first-transmission loss") }
        if !arq { notes.append("ARQ off: nothing is retransmitted; a packet is lost once a window of newer ones has been sent") }
        let stalls = t.stalls
        let stallCount = Int(stalls.totalCount)
        var stallTotal = 0.0
        for v in stalls.recordedValues() { stallTotal += Double(v.value) * Double(v.count) / 1000 }
        let v = t.verification
        self.init(
            direction: outcome.direction.rawValue, level: level.name, k: level.k, m: level.m,
            flushTimeoutMs: level.isEnabled ? level.flushTimeoutMs : nil, originals: n, deliveredDirect: t.deliveredDirect,
            recoveredByFEC: t.rebuiltByFEC, repairedByARQ: t.repairedByARQ, lost: t.lost,
            firstTransmissionLoss: rate(t.firstTransmissionsLost, n), residualLossFEC: rate(t.residualLostFEC, n),
            residualLoss: rate(t.lost, n),
            intervals: .init(firstTransmissionLoss: .init(t.firstTransmissionsLost, of: n), residualLossFEC: .init(t.residualLostFEC, of: n),
                             residualLoss: .init(t.lost, of: n), groupFailure: .init(t.groupsFailedFEC, of: t.groups)),
            groups: .init(total: t.groups, failed: t.groupsFailedFEC, failureRate: rate(t.groupsFailedFEC, t.groups),
                          closedByFlushTimeout: t.groupsFlushed, repairSent: t.repairSent, repairUsed: t.repairUsed),
            retransmissions: .init(total: t.retransmissions, byNACK: t.retransmissionsByNACK, byRTO: t.retransmissionsByRTO,
                                   spurious: t.retransmissionsSpurious, needed: t.retransmissions - t.retransmissionsSpurious,
                                   timerExpiries: t.timerExpiries),
            feedback: .init(messages: t.feedbackMessages, lost: t.feedbackLost, ackEntries: t.ackEntries, nackEntries: t.nackEntries),
            bytes: .init(dataPackets: t.dataPackets, data: t.dataBytes, feedback: t.feedbackBytes, useful: t.usefulBytes),
            overhead: overhead, goodputBytesPerSecond: outcome.goodputBytesPerSecond, delayMs: delay,
            inOrderDelayMs: .init(outcome.inOrderDelay), headOfLineMs: .init(outcome.headOfLine),
            stallMs: .init(count: stallCount, totalMs: stallTotal, p50: stallCount > 0 ? Double(stalls.valueAtPercentile(50)) / 1000 : nil,
                           p99: stallCount >= 100 ? Double(stalls.valueAtPercentile(99)) / 1000 : nil,
                           max: stallCount > 0 ? Double(stalls.max) / 1000 : 0),
            opportunities: .init(passed: t.opportunitiesPassed, used: t.opportunitiesUsed, feedbackUsed: t.feedbackOpportunitiesUsed),
            isal: .init(groupsVerified: v.groups, mismatches: v.mismatches,
                        encodeMicrosPerGroup: v.groups > 0 ? Double(v.encodeNs) / Double(v.groups) / 1000 : nil,
                        decodeMicrosPerGroup: v.groups > 0 ? Double(v.decodeNs) / Double(v.groups) / 1000 : nil),
            notes: notes)
    }
}

extension SimulateReport.Interval {
    /// z as simulate.json/1 has always written its 95 % intervals (rounded to 6 places): the figures
    /// stay comparable with earlier reports; the difference from `WilsonInterval.z95` is below 1e-9.
    static let z = 1.959964

    /// The 95 % Wilson interval of `count` in `of`, or nil with no trials.
    init?(_ count: Int, of: Int) {
        guard let w = WilsonInterval(successes: count, trials: of, z: Self.z) else { return nil }
        self.init(low: w.low, high: w.high, count: count, of: of)
    }
}

extension SimulateReport.Percentiles {
    init(_ p: SimulationResult.Percentiles) {
        self.init(samples: p.samples, p50: p.p50, p90: p.p90, p99: p.p99, p999: p.p999, max: p.max)
    }
}
