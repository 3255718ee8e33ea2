import Base
import DNSWire
import Foundation
@testable import ProbeClient
import Testing
@testable import Results

/// history.jsonl's lines, built without formatting strings per check.
@Suite struct MonitorHistoryTests {
    static func target() throws -> MonitorTarget {
        MonitorTarget(resolver: try Endpoint(parsing: "192.0.2.7", defaultPort: 53), zone: try DNSName("vpn.lab.test"),
                      queryCharacters: 180, answerBytes: 900, spare: false)
    }

    /// Writes through a temporary file and returns its lines.
    static func lines(_ write: (MonitorHistory) -> Void) throws -> [String] {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("tp-history-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(FileManager.default.createFile(atPath: path, contents: nil))
        let handle = try #require(FileHandle(forWritingAtPath: path))
        let history = MonitorHistory(fd: handle.fileDescriptor, targets: [try target()])
        write(history)
        try handle.close()
        #expect(history.failure == nil)
        return try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
    }

    @Test func checkLinesAsBefore() throws {
        let written = try Self.lines { h in
            h.check(at: 12.3456, pair: 0, outcome: ProbeOutcome(rttNanos: 1_500_000), rttMs: 1.5, diagnosed: false, drift: nil)
            h.check(at: 0.0004, pair: 0, outcome: ProbeOutcome(failure: .timeout), rttMs: nil, diagnosed: true, drift: nil)
            h.check(at: 3600, pair: 0, outcome: ProbeOutcome(failure: .servfail), rttMs: nil, diagnosed: true,
                    drift: SizeDrift(at: 3600, queryCharacters: 85, answerBytes: nil))
            h.check(at: 1, pair: 0, outcome: ProbeOutcome(failure: .timeout), rttMs: nil, diagnosed: false, drift: nil)
        }
        #expect(written == [
            #"{"t":12.346,"resolver":"192.0.2.7:53","domain":"vpn.lab.test","ok":true,"rttMs":1.500}"#,
            #"{"t":0.000,"resolver":"192.0.2.7:53","domain":"vpn.lab.test","ok":false,"failure":"timeout","down":true}"#,
            #"{"t":3600.000,"resolver":"192.0.2.7:53","domain":"vpn.lab.test","ok":false,"failure":"servfail","drift":{"queryCharacters":85,"answerBytes":null,"scanQueryCharacters":180,"scanAnswerBytes":900}}"#,
            #"{"t":1.000,"resolver":"192.0.2.7:53","domain":"vpn.lab.test","ok":false,"failure":"timeout"}"#,
        ])
    }

    /// Times and RTTs print as `%.3f` does, over 2,000 seeded random doubles (seed 1919) from 0 to
    /// 10,000 and from 0 to 10 (values written with few decimals, exactly halfway between two
    /// thousandths in decimal, may differ in the last digit: printf rounds the binary value).
    @Test func numbersAsPrintf() throws {
        var rng = SplitMix64(seed: 1919)
        let values = (0..<2000).map { i in Double(rng.next() >> 11) / Double(1 << 53) * (i % 2 == 0 ? 10_000 : 10) }
        let written = try Self.lines { h in
            for v in values { h.check(at: v, pair: 0, outcome: ProbeOutcome(rttNanos: 1), rttMs: v, diagnosed: false, drift: nil) }
        }
        #expect(written.count == values.count)
        for (line, v) in zip(written, values) {
            let text = String(format: "%.3f", v)
            #expect(line.hasPrefix("{\"t\":\(text),") && line.hasSuffix("\"rttMs\":\(text)}"), "\(v): \(line)")
        }
    }

    /// A rate line carries the whole measurement under `rate` and parses as JSON.
    @Test func rateLine() throws {
        let sample = MonitorRateTests.sample(at: 30.25, rate: 41.25, lost: 1, sent: 80)
        let written = try Self.lines { $0.rate(at: 42.5, pair: 0, sample: sample) }
        let line = try #require(written.first)
        #expect(line.hasPrefix(#"{"t":42.500,"resolver":"192.0.2.7:53","domain":"vpn.lab.test","rate":{"#))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        let rate = try #require(object["rate"] as? [String: Any])
        #expect(rate["sustainableRate"] as? Double == 41.25 && rate["at"] as? Double == 30.25 && rate["limitedBy"] as? String == "rateLimiter")
        #expect((rate["loss"] as? [String: Any])?["count"] as? Int == 1 && (rate["rttMs"] as? [String: Any])?["p50"] as? Double == 2)
    }
}
