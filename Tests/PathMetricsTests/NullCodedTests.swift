import Base
import Foundation
import PathMetrics
import Testing
import Results

/// Metrics that were not measured are written as null (the key is there), an optional CDF is left
/// out, and a document without those keys still loads.
@Suite struct NullCodedTests {
    static func json(_ value: some Encodable) throws -> [String: Any] {
        let data = try JSONEncoder().encode(value)
        return try #require(try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) as? [String: Any])
    }

    @Test func absentFiguresAreWrittenAsNull() throws {
        let none = try Self.json(Proportion(count: 0, samples: 0))
        #expect(Set(none.keys) == ["count", "samples", "ratio", "ciLow", "ciHigh", "reason"])
        #expect(none["ratio"] is NSNull && none["ciLow"] is NSNull && none["ciHigh"] is NSNull)
        #expect(none["reason"] as? String == "no samples")
        let measured = try Self.json(Proportion(count: 1, samples: 4))
        #expect(measured["ratio"] as? Double == 0.25 && measured["reason"] is NSNull)
    }

    @Test func anOptionalListWithoutValueIsLeftOut() throws {
        let delays = try Self.json(Percentiles(nanoseconds: []))
        #expect(delays["cdf"] == nil)
        #expect(delays["p50"] is NSNull && delays["samples"] as? Int == 0)
    }

    @Test func missingKeysDecodeAsNil() throws {
        let p = try JSONDecoder().decode(Proportion.self, from: Data(#"{"count": 2, "samples": 3}"#.utf8))
        #expect(p.count == 2 && p.ratio == nil && p.reason == nil)
        let back = try JSONDecoder().decode(Proportion.self, from: JSONEncoder().encode(Proportion(count: 1, samples: 3)))
        #expect(back == Proportion(count: 1, samples: 3))
    }
}
