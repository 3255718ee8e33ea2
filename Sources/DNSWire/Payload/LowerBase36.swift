/// MasterDnsVPN's (Go edition) lower-case base 36: every 7 bytes become 11 characters (the 56-bit
/// block as an 11-digit number), a tail of 1...6 bytes becomes 2, 4, 5, 7, 8 or 10 digits; decoding
/// takes either letter case. Unlike `LabelEncoding.base36` (one big integer) the length depends only
/// on the byte count. Read in internal/basecodec/lowerbase36.go at commit bc69a58. Both layouts
/// share one alphabet and one reverse table (`LabelEncoding.base36Alphabet`, `base36Table`).
public enum LowerBase36 {
    static let alphabet = LabelEncoding.base36Alphabet
    /// Characters for a tail of n bytes, n = 0...7.
    static let charsForBytes = [0, 2, 4, 5, 7, 8, 10, 11]

    /// Characters that `count` bytes encode to.
    public static func encodedLength(_ count: Int) -> Int {
        guard count > 0 else { return 0 }
        return count / 7 * 11 + charsForBytes[count % 7]
    }

    public static func encode(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(encodedLength(bytes.count))
        var start = 0
        while start < bytes.count {
            let end = min(start + 7, bytes.count)
            var value: UInt64 = 0
            for b in bytes[start..<end] { value = value << 8 | UInt64(b) }
            let digits = charsForBytes[end - start]
            var block = [UInt8](repeating: 0, count: digits)
            for i in stride(from: digits - 1, through: 0, by: -1) {
                block[i] = alphabet[Int(value % 36)]
                value /= 36
            }
            out += block
            start = end
        }
        return out
    }

    /// Why a text is not lower-case base 36 of this kind.
    public enum DecodeError: Error, Equatable, Sendable {
        /// A character outside 0-9, a-z, A-Z, at this offset.
        case badCharacter(offset: Int)
        /// A tail length no byte count encodes to (1, 3, 6 or 9 characters).
        case badLength(Int)
        /// A block whose value does not fit its byte count.
        case overflow(offset: Int)
    }

    public static func decode(_ text: some Collection<UInt8>) throws(DecodeError) -> [UInt8] {
        let chars = Array(text)
        var out: [UInt8] = []
        out.reserveCapacity(chars.count / 11 * 7 + 7)
        var start = 0
        while start < chars.count {
            let left = chars.count - start
            let digits = min(11, left)
            guard let bytes = charsForBytes.firstIndex(of: digits), bytes > 0 else { throw .badLength(digits) }
            var value: UInt64 = 0
            for (i, c) in chars[start..<start + digits].enumerated() {
                guard let digit = Self.digit(c) else { throw .badCharacter(offset: start + i) }
                // 11 digits of 36 can exceed 2^64 only through digits a 7-byte block never makes.
                let (m, o1) = value.multipliedReportingOverflow(by: 36)
                let (s, o2) = m.addingReportingOverflow(UInt64(digit))
                guard !o1, !o2 else { throw .overflow(offset: start) }
                value = s
            }
            guard value >> (8 * UInt64(bytes)) == 0 else { throw .overflow(offset: start) }
            for i in stride(from: bytes - 1, through: 0, by: -1) { out.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(i)))) }
            start += digits
        }
        return out
    }

    static func digit(_ c: UInt8) -> UInt8? {
        let value = LabelEncoding.base36Table[Int(c)]
        return value == LabelEncoding.invalidDigit ? nil : value
    }
}
