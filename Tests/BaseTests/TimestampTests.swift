import Base
import Foundation
import Testing

/// Timestamps are written without Foundation's ICU formatters (start-up cost), so they must be the
/// formatters' text, rounding included.
struct TimestampTests {
    @Test func theTextIsTheFormattersTextRoundingIncluded() {
        let iso = ISO8601DateFormatter()
        iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let compact = DateFormatter()
        compact.locale = Locale(identifier: "en_US_POSIX")
        compact.timeZone = TimeZone(identifier: "UTC")
        compact.dateFormat = "yyyyMMdd-HHmmss"
        var rng = SplitMix64(seed: 27)
        let fixed: [Double] = [0, 1.0005, 1.9996, 1_764_242_041.9999, 1_764_242_041.0005, 1_764_242_041.1235, 951_782_400.5]
        let random = (0..<20_000).map { i -> Double in
            let whole = Double(1_000_000_000 + Int(rng.next() % 3_000_000_000))
            // Every other one half a millisecond past a millisecond: where rounding shows.
            return i % 2 == 0 ? whole + Double(rng.next() % 1_000_000) / 1_000_000 : whole + (Double(rng.next() % 1000) + 0.5) / 1000
        }
        var mismatches: [String] = []
        for t in fixed + random {
            let date = Date(timeIntervalSince1970: t)
            if Timestamp.rfc3339(date) != iso.string(from: date) { mismatches.append("\(t): \(Timestamp.rfc3339(date)) vs \(iso.string(from: date))") }
            if Timestamp.compact(date) != compact.string(from: date) { mismatches.append("\(t): \(Timestamp.compact(date)) vs \(compact.string(from: date))") }
        }
        #expect(mismatches.isEmpty, "seed 27: \(mismatches.prefix(5))")
        #expect(Timestamp.rfc3339(Date(timeIntervalSince1970: 1_764_242_041.9999)) == "2025-11-27T11:14:02.000Z")
    }
}
