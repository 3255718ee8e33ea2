import Base

/// Numeric extremes written into a report's JSON (issue 27: an edited path.json with an out-of-range
/// count trapped `report render`). Works on the text: every number token outside a string may be
/// replaced, so the same code serves every report kind and keeps whatever else the file holds.
public enum ReportExtremes {
    /// What a hostile or corrupt file may hold where a renderer expects a count, a duration or a rate:
    /// the edges of Int, UInt64 and Int32, past Double's exact integers, the largest and smallest
    /// finite doubles, negatives and zero.
    public static let values = [
        "9223372036854775807", "-9223372036854775808", "18446744073709551615", "9223372036854775808",
        "2147483648", "-2147483649", "4294967296", "9007199254740993", "1e19", "-1e19",
        "1.7976931348623157e308", "-1.7976931348623157e308", "1e-320", "-1", "0", "-0.5", "1e300",
    ]

    /// The byte ranges of the number tokens of `json` (outside strings).
    public static func numberRanges(_ json: [UInt8]) -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        var i = 0
        var inString = false
        while i < json.count {
            let c = json[i]
            if inString {
                if c == UInt8(ascii: "\\") { i += 2; continue }
                if c == UInt8(ascii: "\"") { inString = false }
                i += 1
            } else if c == UInt8(ascii: "\"") {
                inString = true
                i += 1
            } else if c == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c) {
                let start = i
                i += 1
                while i < json.count, Self.numberBytes.contains(json[i]) { i += 1 }
                ranges.append(start..<i)
            } else {
                i += 1
            }
        }
        return ranges
    }

    static let numberBytes = Set("0123456789+-.eE".utf8)

    /// `json` with the number tokens `choose` picks replaced by the extreme it names (an index into
    /// `values`; nil keeps the token).
    public static func replacing(_ json: [UInt8], _ choose: (Int) -> Int?) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(json.count + 64)
        var last = 0
        for (n, range) in numberRanges(json).enumerated() {
            guard let v = choose(n) else { continue }
            out += json[last..<range.lowerBound]
            out += Array(values[v % values.count].utf8)
            last = range.upperBound
        }
        out += json[last...]
        return out
    }

    /// A seeded variant: each number becomes an extreme with probability `share`.
    public static func seeded(_ json: [UInt8], seed: UInt64, share: Double) -> [UInt8] {
        var rng = SplitMix64(seed: seed)
        return replacing(json) { _ in
            let draw = rng.next()
            return Double(draw >> 11) / 9_007_199_254_740_992 < share ? Int(draw % UInt64(values.count)) : nil
        }
    }

    /// FNV-1a of the input: the fuzz target's seed for its extreme variant, so a crash replays.
    public static func hash(_ bytes: [UInt8]) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        return h
    }
}
