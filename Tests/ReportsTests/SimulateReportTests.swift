import Foundation
import Reports
import Testing
import TestSupport
import Results

@Suite struct SimulateReportTests {
    static func sample() -> SimulateReport {
        func level(_ name: String, k: Int, m: Int, fec: Double, p99: Double, overhead: Double) -> SimulateReport.Level {
            SimulateReport.Level(
                direction: "download", level: name, k: k, m: m, flushTimeoutMs: k > 0 ? 20 : nil, originals: 10_000,
                deliveredDirect: 9_500, recoveredByFEC: k > 0 ? 450 : 0, repairedByARQ: k > 0 ? 50 : 500, lost: 0,
                firstTransmissionLoss: 0.05, residualLossFEC: fec, residualLoss: 0,
                intervals: .init(firstTransmissionLoss: .init(low: 0.046, high: 0.054, count: 500, of: 10_000),
                                 residualLossFEC: .init(low: fec * 0.8, high: fec * 1.2, count: Int(fec * 10_000), of: 10_000),
                                 residualLoss: .init(low: 0, high: 0.00038, count: 0, of: 10_000), groupFailure: nil),
                groups: .init(total: k > 0 ? 833 : 0, failed: k > 0 ? 5 : 0, failureRate: k > 0 ? 0.006 : nil, closedByFlushTimeout: 1,
                              repairSent: k > 0 ? 2500 : 0, repairUsed: k > 0 ? 450 : 0),
                retransmissions: .init(total: 60, byNACK: 40, byRTO: 20, spurious: 10, needed: 50, timerExpiries: 20),
                feedback: .init(messages: 2000, lost: 40, ackEntries: 10_000, nackEntries: 45),
                bytes: .init(dataPackets: 12_560, data: 6_606_560, feedback: 60_000, useful: 5_120_000),
                overhead: overhead, goodputBytesPerSecond: 250_000,
                delayMs: .init(samples: 10_000, p50: 50, p90: 60, p99: p99, p999: 400, max: 900),
                inOrderDelayMs: .init(samples: 10_000, p50: 52, p90: 70, p99: p99 + 20, p999: 420, max: 910),
                headOfLineMs: .init(samples: 300, p50: 10, p90: 40, p99: 90, p999: nil, max: 120),
                stallMs: .init(count: 12, totalMs: 800, p50: 60, p99: nil, max: 140),
                opportunities: .init(passed: 12_600, used: 12_560, feedbackUsed: 2000),
                isal: .init(groupsVerified: k > 0 ? 200 : 0, mismatches: 0, encodeMicrosPerGroup: k > 0 ? 1.5 : nil,
                            decodeMicrosPerGroup: k > 0 ? 4.25 : nil),
                notes: k > 0 ? [] : ["no FEC: residual loss after FEC alone is the first-transmission loss"])
        }
        return SimulateReport(
            run: RunInfo(id: "20261121-000000-simulate-1", version: "0.1.0", commandLine: ["tunnelprobe", "simulate"],
                         vantage: "lab", seed: 7, startedAt: "2026-11-21T00:00:00Z"),
            input: .init(kind: "fates", file: "fates.json", sha256: "0123456789abcdef0123", fatesSource: "trace: lab capture",
                         resolver: "198.51.100.7:53",
                         streams: [.init(direction: "download", data: "down", dataPackets: 10_000, dataLoss: 0.05, feedback: "up",
                                         delaysFilled: 0)],
                         seed: 7, runs: 5, opportunitiesPerRun: 10_000),
            settings: .init(direction: "download", traffic: "bulk", symbolSize: 512, headerBytes: 14, feedbackEntryBytes: 2,
                            overheadBudget: 1.5, verifyGroupsPerRun: 200,
                            arq: .init(enabled: true, window: 600, retryLimit: 126, initialRTOMs: 1000, minRTOMs: 100, maxRTOMs: 5000,
                                       backoffFactor: 2, nackDelayMs: 100, nackRepeatMs: 1000, nackMaxGap: 16, ackIntervalMs: 10)),
            levels: [level("none", k: 0, m: 0, fec: 0.05, p99: 400, overhead: 1.17),
                     level("balanced", k: 12, m: 3, fec: 0.0005, p99: 120, overhead: 1.36)],
            recommendations: [.init(direction: "download", level: "balanced", withinBudget: true,
                                    reason: "balanced has the lowest p99 delivery delay (120.0 ms vs 400.0 ms for none) at 1.36 bytes on the wire per useful byte, within the budget of 1.5.")],
            isal: .init(library: "Intel ISA-L 2.30.0", groupsVerified: 200, mismatches: 0, symbolSize: 512))
    }

    @Test func jsonHasTheDocumentedKeys() throws {
        let text = try ReportWriter.json(Self.sample())
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(object["schema"] as? String == "tunnelprobe.simulate/3")
        let level = try #require((object["levels"] as? [[String: Any]])?.last)
        for key in ["level", "k", "m", "residualLossFEC", "residualLoss", "recoveredByFEC", "repairedByARQ", "overhead"] {
            #expect(level[key] != nil, "\(key)")
        }
        #expect((level["delayMs"] as? [String: Any])?["p50"] as? Double == 50)
        #expect((level["delayMs"] as? [String: Any])?["p99"] as? Double == 120)
        #expect((level["stallMs"] as? [String: Any])?["max"] as? Double == 140)
        #expect((object["recommendation"] as? [String: Any])?["level"] as? String == "balanced")
        #expect(try JSONDecoder().decode(SimulateReport.self, from: Data(text.utf8)) == Self.sample())
    }

    @Test func markdownMatchesTheGoldenFile() throws {
        let golden = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden/simulate.md")
        let rendered = Self.sample().markdown()
        #expect(rendered == (try Golden.expected(rendered, file: golden)))
    }
}
