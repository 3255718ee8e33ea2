/// An IPv4 or IPv6 address as captured, compact enough to key tables by.
public enum IPAddress: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Network byte order folded into a host integer (192.0.2.1 is 0xC000_0201).
    case v4(UInt32)
    /// The 128 bits as two big-endian halves.
    case v6(UInt64, UInt64)

    public var version: Int {
        switch self {
        case .v4: 4
        case .v6: 6
        }
    }

    /// Dotted quad for IPv4; RFC 5952 canonical text for IPv6 (lower case, longest zero run as `::`).
    public var description: String {
        switch self {
        case .v4(let a):
            return "\(a >> 24).\((a >> 16) & 0xff).\((a >> 8) & 0xff).\(a & 0xff)"
        case .v6(let hi, let lo):
            let groups: [UInt16] = (0..<8).map { i in
                let half = i < 4 ? hi : lo
                return UInt16(truncatingIfNeeded: half >> (UInt64(3 - i % 4) * 16))
            }
            // RFC 5952 section 4.2: compress the longest run of two or more zero groups, the first on ties.
            var bestStart = -1, bestLength = 1, runStart = -1
            for i in 0...8 {
                if i < 8, groups[i] == 0 {
                    if runStart < 0 { runStart = i }
                } else if runStart >= 0 {
                    if i - runStart > bestLength { bestStart = runStart; bestLength = i - runStart }
                    runStart = -1
                }
            }
            func hex(_ range: Range<Int>) -> String {
                groups[range].map { String($0, radix: 16) }.joined(separator: ":")
            }
            if bestStart < 0 { return hex(0..<8) }
            return hex(0..<bestStart) + "::" + hex((bestStart + bestLength)..<8)
        }
    }

    /// Parses dotted-quad IPv4 or textual IPv6 (with `::`, without zone); nil when it is neither.
    public init?(_ text: some StringProtocol) {
        if text.contains(":") {
            var words: [UInt16] = []
            let parts = text.split(separator: "::", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count <= 2 else { return nil }
            func groups(_ s: Substring) -> [UInt16]? {
                if s.isEmpty { return [] }
                var out: [UInt16] = []
                for g in s.split(separator: ":", omittingEmptySubsequences: false) {
                    guard g.count >= 1, g.count <= 4, let v = UInt16(g, radix: 16) else { return nil }
                    out.append(v)
                }
                return out
            }
            let text = Substring(text)
            if parts.count == 2 {
                let head = String(parts[0]), tail = String(parts[1])
                guard let h = groups(Substring(head)), let t = groups(Substring(tail)), h.count + t.count <= 7 else { return nil }
                words = h + Array(repeating: 0, count: 8 - h.count - t.count) + t
            } else {
                guard let all = groups(text), all.count == 8 else { return nil }
                words = all
            }
            var hi: UInt64 = 0, lo: UInt64 = 0
            for i in 0..<4 { hi = hi << 16 | UInt64(words[i]) }
            for i in 4..<8 { lo = lo << 16 | UInt64(words[i]) }
            self = .v6(hi, lo)
        } else {
            let parts = text.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 4 else { return nil }
            var value: UInt32 = 0
            for p in parts {
                guard !p.isEmpty, p.count <= 3, let octet = UInt8(p) else { return nil }
                value = value << 8 | UInt32(octet)
            }
            self = .v4(value)
        }
    }
}
