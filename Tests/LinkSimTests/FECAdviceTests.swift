import Base
import FEC
import Foundation
@testable import LinkSim
import Reports
import Testing
import TestSupport
@testable import Results

/// Issue 20's "done means": honest intervals against the exact binomial values, group sizes that match
/// the simulator's own log, and a recommendation that follows the metrics FEC is for.
@Suite struct FECAdviceTests {
    static let run = RunInfo(id: "t", version: "0", commandLine: [], vantage: "test", seed: 1, startedAt: "t")

    /// P(more than m of n = k + m symbols lost) and the expected share of originals lost with them: a
    /// failed group with i of its n symbols lost has lost i k / n originals on average (every symbol is
    /// equally likely to be lost), so residual loss = sum over i > m of P(i) i / n.
    static func exact(k: Int, m: Int, q: Double) -> (failure: Double, residual: Double) {
        let n = k + m
        var failure = 0.0, residual = 0.0
        for i in (m + 1)...n {
            var c = 1.0
            for j in 0..<i { c = c * Double(n - j) / Double(j + 1) }
            let p = c * pow(q, Double(i)) * pow(1 - q, Double(n - i))
            failure += p
            residual += p * Double(i) / Double(n)
        }
        return (failure, residual)
    }

    @Test func clusterIntervalsCoverTheExactBinomialValuesIn40SeededCases() async throws {
        // Full groups: a flush timeout no group reaches.
        let levels = [FECLevel(name: "8:2", k: 8, m: 2, flushTimeoutMs: 60_000), FECLevel(name: "12:3", k: 12, m: 3, flushTimeoutMs: 60_000),
                      FECLevel(name: "16:7", k: 16, m: 7, flushTimeoutMs: 60_000)]
        var covered: [String: Int] = [:]
        var wilsonCovered: [String: Int] = [:]
        for i in 0..<40 {
            let q = 0.01 + 0.19 * Double(i) / 39
            var request = SimulationRequest(source: .model(LossModel(.bernoulli(q), delayMs: 1, opportunitiesPerSecond: 100_000)))
            request.levels = levels
            request.arq.enabled = false
            request.arq.window = 4096
            request.arq.maxRTOMs = 5
            request.runs = 2
            request.seed = 4_000 + UInt64(i)
            request.opportunities = 24_000
            request.verifyGroups = 0
            let ready = request
            let report = try await offCooperativePool { SimulateReport(try Simulation.run(ready), run: Self.run) }
            for (row, level) in zip(report.levels, levels) {
                let truth = Self.exact(k: level.k, m: level.m, q: q)
                #expect(row.groups.closedByFlushTimeout <= 2)
                guard let failure = row.clusterIntervals?.groupFailure, let residual = row.clusterIntervals?.residualLossFEC else {
                    Issue.record("\(level.name) q=\(q): no cluster intervals")
                    continue
                }
                if failure.low <= truth.failure && truth.failure <= failure.high { covered["\(level.name) failure", default: 0] += 1 } else {
                    print("miss \(level.name) q=\(q): \(failure.count)/\(failure.of) [\(failure.low), \(failure.high)] exact \(truth.failure)")
                }
                if residual.low <= truth.residual && truth.residual <= residual.high { covered["\(level.name) residual", default: 0] += 1 }
                if let w = row.intervals.residualLossFEC, w.low <= truth.residual && truth.residual <= w.high {
                    wilsonCovered["\(level.name) residual", default: 0] += 1
                }
            }
        }
        print("interval coverage of the exact values in 40 cases: \(covered.sorted { $0.key < $1.key }); packets-independent Wilson (residual): \(wilsonCovered.sorted { $0.key < $1.key })")
        // Even an exact 95 % interval covers 38 of 40 only about two times in three, and the three levels
        // of a case share one channel (one seed), so their misses coincide: the test asks 95 % of all
        // 240 checks, and 36 of 40 (90 %) of each level's figure. The packets-independent Wilson interval
        // fails it (26-35 of 40 for residual loss). The same cases over 400 seeds
        // (scripts/fec-coverage.py, whose first 40 are these) cover 95.2-99.2 % per figure.
        let total = covered.values.reduce(0, +)
        #expect(total >= 228, "\(total) of 240")
        for level in levels {
            for figure in ["failure", "residual"] {
                #expect(covered["\(level.name) \(figure)", default: 0] >= 36, "\(level.name) \(figure): \(covered["\(level.name) \(figure)", default: 0]) of 40")
            }
        }
    }

    /// The same channels Simulation.run builds for run 0 of a model (seed, and seed ^ 0xFEED_BACC for feedback).
    @Test(arguments: [100.0, 500.0, 2000.0])
    func groupSizesInTheReportMatchACountFromTheSendLog(rate: Double) throws {
        let model = LossModel(.bernoulli(0.05), opportunitiesPerSecond: rate)
        var request = SimulationRequest(source: .model(model))
        request.runs = 1
        request.seed = 20
        request.opportunities = 6_000
        request.verifyGroups = 0
        let report = SimulateReport(try Simulation.run(request), run: Self.run)
        var lines: [String] = []
        for level in FECLevel.presets where level.isEnabled {
            var settings = LinkSimulator.Settings(level: level, opportunities: 6_000, verifyGroups: 0, seed: 20)
            settings.recordsLog = true
            var sim = LinkSimulator(settings: settings, data: Channel(model: model, seed: 20), feedback: Channel(model: model, seed: 20 ^ 0xFEED_BACC))
            _ = sim.run()
            // Originals per group and repair symbols per group, counted from what was sent.
            var originals: [Int: Int] = [:]
            var repairs: [Int: Int] = [:]
            for r in sim.sendLog {
                switch r.kind {
                case .original: originals[r.group, default: 0] += 1
                case .repair: repairs[r.group, default: 0] += 1
                case .retransmission: break
                }
            }
            var counted: [String: Int] = [:]
            for (g, k) in originals { counted["\(k)+\(repairs[g] ?? 0)", default: 0] += 1 }
            let row = try #require(report.levels.first { $0.level == level.name })
            let formed = try #require(row.groupsFormed)
            var reported: [String: Int] = [:]
            for s in formed.sizes { reported["\(s.k)+\(s.m)"] = s.groups }
            #expect(reported == counted, "\(level.name) at \(rate)/s")
            #expect(formed.total == originals.count)
            lines.append("\(level.name) \(formed.nominal) -> \(String(format: "%.2f+%.2f", formed.meanK ?? 0, formed.meanM ?? 0)), flushed \(formed.closedByFlushTimeout)/\(formed.total), log \(counted.sorted { $0.value > $1.value }.prefix(3))")
        }
        print("\(Int(rate))/s: " + lines.joined(separator: " | "))
        if rate == 100 {
            // 10 ms between packets: no preset's group fills within its 15-25 ms flush timeout.
            #expect(report.levels.filter { $0.k > 0 }.allSatisfy { ($0.groupsFormed?.meanK ?? 99) < 4 })
        }
    }

    /// The RaptorQ model (`rq:k:m`) on the same channel as Reed-Solomon `k:m`: it fails every group
    /// Reed-Solomon fails, plus the groups that held k or more symbols but fewer than k + h (h drawn
    /// with P(more than h) = 256^-(h+1)) and had lost an original. The extra failures match their
    /// exact expectation, and both codes' failure rates match theirs.
    @Test func raptorQModelFailsWhereItsReceptionOverheadSays() async throws {
        let (k, m, q) = (8, 2, 0.1)
        let levels = [FECLevel(name: "8:2", k: k, m: m, flushTimeoutMs: 60_000),
                      FECLevel(name: "rq:8:2", k: k, m: m, flushTimeoutMs: 60_000, code: .raptorQModel)]
        var request = SimulationRequest(source: .model(LossModel(.bernoulli(q), delayMs: 1, opportunitiesPerSecond: 100_000)))
        request.levels = levels
        request.arq.enabled = false
        request.arq.window = 4096
        request.arq.maxRTOMs = 5
        request.runs = 1
        request.seed = 77
        request.opportunities = 300_000
        request.verifyGroups = 50
        let ready = request
        let report = try await offCooperativePool { SimulateReport(try Simulation.run(ready), run: Self.run) }
        guard let rs = report.levels.first(where: { $0.level == "8:2" }), let rq = report.levels.first(where: { $0.level == "rq:8:2" }) else {
            Issue.record("a level is missing from the report")
            return
        }
        #expect(rs.groups.total == rq.groups.total && rs.groups.total > 25_000)
        // Exact: originals lost a, repair lost b; Reed-Solomon fails when a + b > m, the model when
        // a >= 1 and a + b > m - h.
        func binomial(_ n: Int, _ i: Int, _ p: Double) -> Double {
            var c = 1.0
            for j in 0..<i { c = c * Double(n - j) / Double(j + 1) }
            return c * pow(p, Double(i)) * pow(1 - p, Double(n - i))
        }
        var exactRS = 0.0, exactRQ = 0.0
        for a in 0...k {
            for b in 0...m {
                let pab = binomial(k, a, q) * binomial(m, b, q)
                if a + b > m { exactRS += pab }
                guard a >= 1 else { continue }
                // h extra symbols needed: P(h) = (1 - 1/256) 256^-h, the simulator's draw capped at 8.
                var pFail = 0.0
                for h in 0...8 {
                    let ph = h < 8 ? (1 - 1.0 / 256) * pow(1.0 / 256, Double(h)) : pow(1.0 / 256, 8)
                    if a + b > m - h { pFail += ph }
                }
                exactRQ += pab * pFail
            }
        }
        let groups = Double(rs.groups.total)
        let extra = Double(rq.groups.failed - rs.groups.failed)
        let expectedExtra = (exactRQ - exactRS) * groups
        print("8+2 at q = 0.1: Reed-Solomon \(rs.groups.failed) failed (exact \(exactRS * groups)), RaptorQ model \(rq.groups.failed) (exact \(exactRQ * groups)), extra \(extra) vs \(expectedExtra)")
        #expect(rq.groups.failed >= rs.groups.failed)
        // The extra failures are a Poisson count: within 4 standard deviations of their expectation.
        #expect(abs(extra - expectedExtra) <= 4 * expectedExtra.squareRoot(), "extra \(extra) vs \(expectedExtra)")
        #expect(expectedExtra > 15)
        for (row, exact) in [(rs, exactRS), (rq, exactRQ)] {
            guard let interval = row.clusterIntervals?.groupFailure else {
                Issue.record("\(row.level): no group failure interval")
                continue
            }
            #expect(abs(Double(row.groups.failed) / groups - exact) <= 4 * (exact * (1 - exact) / groups).squareRoot(), "\(row.level)")
            #expect(interval.low <= exact && exact <= interval.high, "\(row.level): [\(interval.low), \(interval.high)] vs \(exact)")
        }
        // Modelled, not encoded: no ISA-L check, and the row says so.
        #expect(rq.isal.groupsVerified == 0 && rs.isal.groupsVerified > 0)
        #expect(rq.notes.contains { $0.hasPrefix("RaptorQ modelled, not encoded") })
        #expect(try FECLevel.parse("rq:12:3") == FECLevel(name: "rq:12:3", k: 12, m: 3, flushTimeoutMs: 20, code: .raptorQModel))
        #expect(throws: FECError.self) { try FECLevel.parse("rq:12") }
    }

    /// Lost packets come one failed group at a time: under bursty loss the clustered interval is wider
    /// than the packets-independent Wilson interval by the square root of the design effect.
    @Test func theClusteredIntervalIsWiderThanWilsonUnderClumpedLoss() throws {
        var request = SimulationRequest(source: .model(LossModel(.gilbertElliott(.init(p: 0.0175, r: 1.0 / 3)), delayMs: 50, opportunitiesPerSecond: 2000)))
        request.levels = [.balanced]
        request.arq.enabled = false
        request.runs = 2
        request.seed = 3
        request.opportunities = 40_000
        request.verifyGroups = 0
        let row = try #require(SimulateReport(try Simulation.run(request), run: Self.run).levels.first)
        let clustered = try #require(row.clusterIntervals?.residualLossFEC)
        let wilson = try #require(row.intervals.residualLossFEC)
        let ratio = (clustered.high - clustered.low) / (wilson.high - wilson.low)
        print("balanced on ge 5 % bursts of 3: design effect \(clustered.designEffect ?? 0), clustered/Wilson width \(ratio)")
        #expect((clustered.designEffect ?? 0) > 2)
        #expect(ratio > 1.4)
        // The replayed channel: 5 % loss in periods of mean length 3, fitted back.
        let channel = try #require(row.channel)
        #expect(abs((channel.loss ?? 0) - 0.05) < 0.01)
        #expect(abs((channel.meanLossPeriod ?? 0) - 3) < 0.4)
        #expect(abs((channel.gilbert.twoState?.meanBurst ?? 0) - 3) < 0.4)
    }

    @Test func withoutARQTheLevelThatLosesLeastIsRecommended() throws {
        var request = SimulationRequest(source: .model(LossModel(.bernoulli(0.2), delayMs: 50, opportunitiesPerSecond: 2000)))
        request.arq.enabled = false
        request.runs = 3
        request.seed = 9
        request.opportunities = 20_000
        request.verifyGroups = 0
        request.overheadBudget = 2
        let report = SimulateReport(try Simulation.run(request), run: Self.run)
        let rec = try #require(report.recommendation)
        let best = try #require(report.levels.min { ($0.residualLoss ?? 1) < ($1.residualLoss ?? 1) })
        #expect(rec.level == best.level)
        #expect(rec.level != "none")
        #expect(rec.reason.contains("residual loss"))
    }

    @Test func aLevelDroppedByTheBudgetIsShownWithTheOverheadThatDroppedIt() throws {
        var request = SimulationRequest(source: .model(LossModel(.bernoulli(0.05), delayMs: 50, opportunitiesPerSecond: 2000)))
        request.runs = 2
        request.seed = 5
        request.opportunities = 10_000
        request.verifyGroups = 0
        request.overheadBudget = 1.2
        let report = SimulateReport(try Simulation.run(request), run: Self.run)
        let rec = try #require(report.recommendation)
        let dropped = rec.dropped ?? []
        let over = report.levels.filter { ($0.overhead ?? 0) > 1.2 }
        #expect(!over.isEmpty)
        #expect(Set(dropped.map(\.level)) == Set(over.map(\.level)))
        for d in dropped {
            #expect(rec.reason.contains("\(d.level) (\(String(format: "%.2f", d.overhead)))"))
        }
        #expect(!dropped.contains { $0.level == rec.level })
    }

    /// Issue 27: 15 % loss in bursts of 5 with a 400 ms round trip (docs/SIMULATE.md's third path).
    /// Every FEC level costs more than 1.5 bytes on the wire per useful byte there, and the old default
    /// budget of 1.5 recommended `none`: the worst level on longest stall, in-order p99 and goodput at
    /// once. Without a budget (the default now) the level chosen is not the worst on those together;
    /// with the user's budget of 1.5 the old answer comes back, and the report says it changed it.
    @Test func theBurstyPathIsNotGivenTheLevelWorstOnWhatTheUserFeels() async throws {
        let model = try LossModel.parse("ge:p=0.035294,r=0.2,h=0,delay=200")
        var request = SimulationRequest(source: .model(model))
        #expect(request.overheadBudget == nil, "no budget by default")
        request.runs = 3
        request.seed = 103
        request.opportunities = 15_000
        request.verifyGroups = 0
        let ready = request
        let result = try await offCooperativePool { try Simulation.run(ready) }
        let report = SimulateReport(result, run: Self.run)
        let rec = try #require(report.recommendation)
        let rows = report.levels
        let worstStall = try #require(rows.max { $0.stallMs.max < $1.stallMs.max }).level
        let worstP99 = try #require(rows.max { ($0.inOrderDelayMs.p99 ?? 0) < ($1.inOrderDelayMs.p99 ?? 0) }).level
        let worstGoodput = try #require(rows.min { ($0.goodputBytesPerSecond ?? 0) < ($1.goodputBytesPerSecond ?? 0) }).level
        print("15 % bursty: recommended \(rec.level); worst longest stall \(worstStall), in-order p99 \(worstP99), goodput \(worstGoodput); \(rec.reason)")
        #expect(!(rec.level == worstStall && rec.level == worstP99 && rec.level == worstGoodput), "\(rec.reason)")
        #expect(rec.level != "none")
        #expect(rec.budgetChangedAnswer == false && rec.withoutBudget == nil && (rec.dropped ?? []).isEmpty)
        #expect(report.settings.overheadBudget == nil)
        #expect(report.markdown().contains("- Overhead budget: none"))

        // The old rule's budget, now only as the user's own limit: it drops every FEC level, and the
        // report says it changed the answer and what the rule picks without it.
        #expect(rows.filter { $0.k > 0 }.allSatisfy { ($0.overhead ?? 0) > 1.5 })
        let capped = try #require(Simulation.recommend(result.outcomes, budget: 1.5))
        #expect(capped.level == "none" && capped.withoutBudget == rec.level)
        #expect(capped.reason.contains("The budget changed the answer: without it the rule picks \(rec.level)."))
        var cappedResult = result
        cappedResult.request.overheadBudget = 1.5
        cappedResult.recommendations = [capped]
        let cappedReport = SimulateReport(cappedResult, run: Self.run)
        #expect(cappedReport.recommendation?.budgetChangedAnswer == true)
        #expect(cappedReport.markdown().contains("Your overhead budget of 1.50 changed the answer: without it the rule picks \(rec.level)."))
        #expect(cappedReport.htmlSection().contains("Your overhead budget of 1.50 changed the answer"))
    }
}
