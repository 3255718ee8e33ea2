import Base
import FEC
import PathMetrics
public import Results

extension SimulateReport {
    /// `simulate.json` from what the simulator measured: the one place where simulation figures become
    /// report fields (rates with their Wilson intervals, percentiles, notes).
    public init(_ result: SimulationResult, run: RunInfo) {
        let request = result.request
        var input: Input
        let streams = result.streams.map {
            var use = StreamUse(direction: Self.transfer($0.direction), data: $0.data.description, dataPackets: $0.dataPackets,
                                dataLoss: $0.dataLoss, feedback: $0.feedback.description, feedbackNote: $0.feedbackNote,
                                delaysFilled: $0.delaysFilled)
            use.opportunitiesPerSecond = $0.opportunitiesPerSecond
            return use
        }
        switch result.source {
        case let .fates(file, sha256, description, resolver):
            input = Input(kind: "fates", file: file, sha256: sha256, fatesSource: description, resolver: resolver, streams: streams,
                          seed: request.seed, runs: request.runs, opportunitiesPerRun: result.opportunitiesPerRun)
        case let .model(model):
            input = Input(kind: "model", streams: streams, model: model.description, modelLoss: model.meanLoss, seed: request.seed,
                          runs: request.runs, opportunitiesPerRun: result.opportunitiesPerRun)
            // Gilbert-Elliott: a Bad sojourn lasts 1 / r packets on average (geometric); Bernoulli: 1 / (1 - p).
            switch model.process {
            case let .bernoulli(p): input.modelMeanBurst = p < 1 ? 1 / (1 - p) : nil
            case let .gilbertElliott(ge): input.modelMeanBurst = ge.r > 0 ? 1 / ge.r : nil
            }
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
                var r = Recommendation(direction: Self.transfer($0.direction), level: $0.level, withinBudget: $0.withinBudget, reason: $0.reason)
                r.decidedBy = $0.decidedBy
                r.tiedWith = $0.tiedWith
                r.dropped = $0.dropped.map { .init(level: $0.level, overhead: $0.overhead) }
                r.withoutBudget = $0.withoutBudget
                r.budgetChangedAnswer = $0.withoutBudget != nil
                return r
            },
            isal: ISAL(library: "Intel ISA-L \(ReedSolomon.libraryVersion)", groupsVerified: result.groupsVerified,
                       mismatches: result.verificationMismatches, symbolSize: request.symbolSize))
        recommendationRule = Simulation.recommendationRule
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
        let delay = outcome.delay
        if delay.samples > 0 && delay.samples < 100 { notes.append("delay p99 needs at least 100 delivered packets") }
        if !level.isEnabled { notes.append("no FEC: residual loss after FEC alone is the first-transmission loss") }
        if level.isEnabled && level.code == .raptorQModel {
            notes.append("RaptorQ modelled, not encoded: a group decodes from k + h of its symbols with probability 1 - 1/256^(h+1) "
                         + "(RaptorQ's reception overhead, RFC 6330 code); no ISA-L check for this level")
        }
        if !arq { notes.append("ARQ off: nothing is retransmitted; a packet is lost once a window of newer ones has been sent") }
        let stalls = t.stalls
        let stallCount = Int(stalls.totalCount)
        var stallTotal = 0.0
        for v in stalls.recordedValues() { stallTotal += Double(v.value) * Double(v.count) / 1000 }
        let v = t.verification
        self.init(
            direction: SimulateReport.transfer(outcome.direction), level: level.name, k: level.k, m: level.m,
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
            inOrderDelayMs: outcome.inOrderDelay, headOfLineMs: outcome.headOfLine,
            stallMs: .init(count: stallCount, totalMs: stallTotal, p50: stallCount > 0 ? Double(stalls.valueAtPercentile(50)) / 1000 : nil,
                           p99: stallCount >= 100 ? Double(stalls.valueAtPercentile(99)) / 1000 : nil,
                           max: stallCount > 0 ? Double(stalls.max) / 1000 : 0),
            opportunities: .init(passed: t.opportunitiesPassed, used: t.opportunitiesUsed, feedbackUsed: t.feedbackOpportunitiesUsed),
            isal: .init(groupsVerified: v.groups, mismatches: v.mismatches,
                        encodeMicrosPerGroup: v.groups > 0 ? Double(v.encodeNs) / Double(v.groups) / 1000 : nil,
                        decodeMicrosPerGroup: v.groups > 0 ? Double(v.decodeNs) / Double(v.groups) / 1000 : nil),
            notes: notes)
        let sizes = outcome.groupSizes
        if level.isEnabled {
            let total = sizes.reduce(0) { $0 + $1.groups }
            let meanM = total > 0 ? Double(sizes.reduce(0) { $0 + $1.m * $1.groups }) / Double(total) : nil
            groupsFormed = .init(nominal: "\(level.k)+\(level.m)", meanK: t.meanGroupOriginals, meanM: meanM,
                                 sizes: sizes.map { .init(k: $0.k, m: $0.m, groups: $0.groups) },
                                 closedByFlushTimeout: t.groupsFlushed, total: total)
            if let mk = t.meanGroupOriginals, mk < Double(level.k) - 0.05 {
                notes.append(String(format: "groups closed with %.1f originals on average (not %d): %d of %d closed on the flush timeout", mk, level.k, t.groupsFlushed, total))
                self.notes = notes
            }
        }
        let clusterName = level.isEnabled ? "FEC groups" : "blocks of \(LinkMetrics.blockSize) consecutive originals"
        func clustered(_ c: ClusteredProportion, count: Int, of: Int) -> SimulateReport.ClusterInterval? {
            guard let ci = c.interval() else { return nil }
            return .init(low: ci.low, high: ci.high, count: count, of: of, clusters: c.clusters, designEffect: c.designEffect,
                         method: "Korn-Graubard: Clopper-Pearson on originals / design effect, clusters = \(clusterName)")
        }
        let groupCI = ClopperPearsonInterval(successes: t.groupsFailedFEC, trials: t.groups)
        clusterIntervals = .init(
            residualLossFEC: clustered(t.residualFECClusters, count: t.residualLostFEC, of: n),
            residualLoss: clustered(t.lostClusters, count: t.lost, of: n),
            groupFailure: groupCI.map { .init(low: $0.low, high: $0.high, count: t.groupsFailedFEC, of: t.groups, clusters: t.groups,
                                             designEffect: nil, method: "Clopper-Pearson over groups (each group one trial)") },
            clusters: clusterName)
        func replicated(_ f: (LinkMetrics) -> Double?) -> SimulateReport.Replicated? {
            let r = ReplicationMean(outcome.runs.compactMap(f))
            guard let mean = r.mean else { return nil }
            let ci = r.interval95
            return .init(mean: mean, low: ci?.low, high: ci?.high)
        }
        replications = .init(
            runs: outcome.runs.count,
            residualLossFEC: replicated { $0.originals > 0 ? Double($0.residualLostFEC) / Double($0.originals) : nil },
            residualLoss: replicated { $0.originals > 0 ? Double($0.lost) / Double($0.originals) : nil },
            groupFailure: replicated { $0.groups > 0 ? Double($0.groupsFailedFEC) / Double($0.groups) : nil },
            stallTotalMs: replicated { $0.stallTotalMs }, stallMaxMs: replicated { $0.stallMaxMs },
            inOrderP99Ms: replicated { $0.inOrderP99Ms }, goodputBytesPerSecond: replicated { $0.goodputBytesPerSecond })
        let ch = t.channel
        var lengths: [SimulateReport.LossPeriod] = []
        for (i, c) in ch.periods.enumerated() where c > 0 {
            if i < 16 { lengths.append(.init(length: i + 1, count: c)) }
        }
        let longer = ch.periods.dropFirst(16).reduce(0, +)
        if longer > 0 { lengths.append(.init(length: 17, count: longer)) }
        channel = .init(datagrams: ch.samples, lost: ch.lost, loss: ch.lossRate,
                        lossPeriods: ch.periodCount, meanLossPeriod: ch.meanPeriod, lossPeriodLengths: lengths,
                        gilbert: GilbertFit(counts: ch))
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

extension SimulateReport {
    /// A data direction in the report's words (`download`, `upload`), the words of `--direction`.
    static func transfer(_ direction: Direction) -> String { SimulationRequest.Transfer.oneWay(direction).rawValue }
}
