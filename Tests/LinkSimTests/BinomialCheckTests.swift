import Base
import FEC
import LinkSim
import Reports
import Testing

/// Under independent loss, the simulated group failure rate of each preset must agree with the
/// binomial tail P(more than m of k + m lost) in the reference table (docs/FEC-ARQ.md), within the
/// run's 95 % Wilson interval.
@Suite struct BinomialCheckTests {
    static let reference: [(level: FECLevel, loss: Double, failure: Double)] = [
        (.conservative, 0.01, 1.1e-4), (.conservative, 0.05, 1.2e-2), (.conservative, 0.10, 7.0e-2),
        (.balanced, 0.01, 1.3e-5), (.balanced, 0.05, 5.5e-3), (.balanced, 0.10, 5.6e-2),
        (.aggressive, 0.01, 4e-11), (.aggressive, 0.05, 9.7e-6), (.aggressive, 0.10, 1.2e-3),
    ]

    /// The exact tail, to show the table's rounding is not what the test leans on.
    static func tail(k: Int, m: Int, p: Double) -> Double {
        let n = k + m
        var total = 0.0
        for lost in (m + 1)...n {
            var c = 1.0
            for i in 0..<lost { c = c * Double(n - i) / Double(i + 1) }
            total += c * pow(p, Double(lost)) * pow(1 - p, Double(n - lost))
        }
        return total
    }

    @Test(arguments: 0..<9)
    func groupFailureAgreesWithTheBinomialTail(index: Int) throws {
        let (level, loss, failure) = Self.reference[index]
        #expect(abs(Self.tail(k: level.k, m: level.m, p: loss) - failure) / failure < 0.1)
        // FEC alone, greedy source on a fast channel so every group fills before its flush timeout.
        var request = SimulationRequest(source: .model(LossModel(.bernoulli(loss), delayMs: 1, opportunitiesPerSecond: 100_000)))
        request.levels = [level]
        request.arq.enabled = false
        request.arq.window = 4096
        request.arq.maxRTOMs = 5  // without ARQ: a packet not there 5 ms after sending is lost
        request.runs = 1
        request.seed = 20_261_121 + UInt64(index)
        request.opportunities = 5_000 * (level.k + level.m)
        request.verifyGroups = 20
        let report = try SimulateReport(Simulation.run(request), run: RunInfo(id: "t", version: "0", commandLine: [], vantage: "test", seed: 1, startedAt: "t"))
        let row = try #require(report.levels.first)
        #expect(row.groups.closedByFlushTimeout <= 2)
        let observed = try #require(row.intervals.groupFailure)
        // The report's interval is 95 %; nine comparisons at 95 % would miss one in three times by chance
        // alone, so the test widens each to 99.9 % (z = 3.29) from the same counts.
        let wide = try #require(WilsonInterval(successes: observed.count, trials: observed.of, z: 3.29))
        let ci = (low: wide.low, high: wide.high, count: observed.count, of: observed.of)
        #expect(ci.of >= 4_900)
        #expect(ci.low <= failure && failure <= ci.high, "\(level.name) at \(loss): \(ci.count)/\(ci.of) failed, CI [\(ci.low), \(ci.high)], table \(failure)")
        #expect(row.isal.groupsVerified > 0)
        #expect(row.recoveredByFEC > 0)
        #expect(row.isal.mismatches == 0)
    }
}

import Foundation
import Results
