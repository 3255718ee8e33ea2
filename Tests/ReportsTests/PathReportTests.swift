import Foundation
import PathMetrics
import Reports
import Testing
import TestSupport
import Results

@Suite struct PathReportTests {
    static func sample(complete: Bool = true) -> PathReport {
        let ms: UInt64 = 1_000_000
        // 40 probes every 10 ms: 3 lost up (5, 6, 30), 2 lost down (12, 21), one late (33), one resolver retry (8),
        // one duplicated response (9), 17 arrives after 18 (reordered), 39 never covered by a history.
        var records: [PathRecord] = []
        var index: UInt64 = 0
        for seq in 0..<40 {
            let sent = UInt64(seq) * 10 * ms
            var r = PathRecord(seq: UInt64(seq), sentNanos: sent)
            if [5, 6, 30].contains(seq) {
                r.view = ResponderView(copies: 0)
            } else if seq == 39 {
                r.view = nil
            } else {
                r.view = ResponderView(copies: seq == 8 ? 2 : 1, receivedMicros: 1_700_000_000_000_000 + sent / 1000 + 2_000,
                                       arrivalIndex: index)
                index += 1
                if [12, 21].contains(seq) {
                    // lost down
                } else if seq == 33 {
                    r.arrivals = [sent + 3_000 * ms]
                } else {
                    let rtt = UInt64(4 + seq % 3) * ms + (seq == 17 ? 12 * ms : 0)
                    r.arrivals = [sent + rtt]
                    if seq == 9 { r.arrivals.append(sent + rtt + ms) }
                }
            }
            records.append(r)
        }
        let analysis = PathAnalysis(records: records, tmaxNanos: 2_000 * ms)
        let run = RunInfo(id: "20261121-000000-path-1", version: "0.1.0", commandLine: ["tunnelprobe", "path"], vantage: "lab",
                          seed: 3, startedAt: "2026-11-21T00:00:00Z", complete: complete, interruption: complete ? nil : "SIGINT")
        return PathReport(
            run: run,
            settings: .init(domain: "vpn.lab.test", rate: 100, count: 40, durationSeconds: nil, uploadCharacters: 48,
                            downloadBytes: 0, recordType: "TXT", tmaxMs: 2000, sharedClock: false),
            resolvers: [.init(resolver: "198.18.0.1:53",
                              stream: .init(id: 77, elapsedSeconds: 2.5, achievedRate: 100, drainsSent: 2, drainsAnswered: 1,
                                            unmatched: 0, responderAbsent: false, inFlightExcluded: 0),
                              analysis: analysis)])
    }

    @Test func jsonCarriesTheDocumentedFields() throws {
        let text = try ReportWriter.json(Self.sample())
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(object["schema"] as? String == "tunnelprobe.path/2")
        let r = try #require((object["resolvers"] as? [[String: Any]])?.first)
        let loss = try #require(r["loss"] as? [String: Any])
        for direction in ["up", "down", "roundTrip"] {
            let d = try #require(loss[direction] as? [String: Any], "\(direction)")
            for field in ["ratio", "ciLow", "ciHigh", "samples"] { #expect(d[field] != nil, "loss.\(direction).\(field)") }
        }
        let up = try #require(loss["up"] as? [String: Any])
        #expect(up["count"] as? Int == 3 && up["samples"] as? Int == 39)
        let down = try #require(loss["down"] as? [String: Any])
        #expect(down["count"] as? Int == 3 && down["samples"] as? Int == 36)
        let reordering = try #require(r["reordering"] as? [String: Any])
        #expect(reordering["ratio"] != nil && reordering["maxExtent"] as? Int == 1)
        let duplicates = try #require(r["duplicates"] as? [String: Any])
        #expect(duplicates["up"] as? Int == 1 && duplicates["down"] as? Int == 1)
        let rtt = try #require(r["rttMs"] as? [String: Any])
        #expect(rtt["p50"] != nil && rtt["p99"] != nil)
        #expect(r["jitterMs"] != nil)
        // Not measured (no shared clock): the key is there, as null, rather than missing.
        #expect(r["oneWayMs"] is NSNull && r.keys.contains("oneWayMs"))
        let upOrder = try #require((reordering["up"] as? [String: Any]))
        #expect(upOrder["maxExtent"] is NSNull)
        let gilbert = try #require(r["gilbert"] as? [String: Any])
        // Round trip: 6 loss periods among 33 good-to-next pairs, 5 recoveries: p = 6/33, r = 5/6. The
        // 3-parameter fit has too few triples, so the report says h = 0 comes from the 2-state model.
        #expect(abs((gilbert["p"] as? Double ?? 0) - 6.0 / 33.0) < 1e-9 && abs((gilbert["r"] as? Double ?? 0) - 5.0 / 6.0) < 1e-9)
        #expect(gilbert["h"] as? Double == 0 && gilbert["model"] as? String == "twoState" && gilbert["reason"] != nil)
        let thin = PathReport.Gilbert(GilbertFit(lostFlags: [false, true, false, false]))
        #expect(thin.p == nil && thin.model == nil && thin.reason != nil)
        let counts = try #require(r["counts"] as? [String: Any])
        #expect(counts["lostUp"] as? Int == 3 && counts["lostDown"] as? Int == 3 && counts["late"] as? Int == 1)
        #expect(counts["lostUnknown"] as? Int == 1 && counts["reordered"] as? Int == 1)
        #expect(try JSONDecoder().decode(PathReport.self, from: Data(text.utf8)) == Self.sample())
    }

    @Test func markdownMatchesTheGoldenFile() throws {
        let rendered = Self.sample().markdown()
        let golden = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden/path.md")
        #expect(rendered == (try Golden.expected(rendered, file: golden)))
    }

    @Test func incompleteRunsSaySo() {
        #expect(Self.sample(complete: false).markdown().contains("**Incomplete run** (SIGINT)"))
    }
}
