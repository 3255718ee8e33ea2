/// Size arithmetic shared by the models: text encodings, how a payload string becomes a query
/// name, and how big a response message is. Pure functions, total on any input (negative lengths
/// count as zero).
public enum WireArithmetic {
    /// RFC 1035 2.3.4: 255 octets on the wire, so 253 characters of text without the trailing dot.
    public static let maxNameText = 253
    /// RFC 1035 2.3.4: a label holds at most 63 octets.
    public static let maxLabel = 63
    /// RFC 1035 4.1.1: the fixed message header.
    public static let headerBytes = 12
    /// RFC 1035 4.1.4: a compressed owner name is one 2-byte pointer.
    public static let compressedName = 2
    /// RFC 1035 4.1.3: TYPE, CLASS, TTL and RDLENGTH after the owner name.
    public static let recordFixed = 10
    /// RFC 6891 6.1.2: an OPT record without options (root name, TYPE, CLASS, TTL, RDLENGTH).
    public static let optRecord = 11
    /// RFC 1035 3.3.14: one character-string holds at most 255 octets.
    public static let maxCharacterString = 255

    /// Length of a domain's text form without a trailing dot and surrounding spaces.
    public static func domainLength(_ domain: String) -> Int {
        var d = domain.filter { !$0.isWhitespace }
        while d.hasSuffix(".") { d.removeLast() }
        return d.utf8.count
    }

    /// Characters of base32 without padding for `bytes` bytes (RFC 4648 6: 5 bytes -> 8 chars).
    public static func base32Chars(_ bytes: Int) -> Int { ceilDiv(max(0, bytes) * 8, 5) }

    /// Characters of a k-bit-per-character encoding without padding (5: base32, 6: base64,
    /// 7: iodine's base128).
    public static func bitPackedChars(_ bytes: Int, bitsPerChar: Int) -> Int {
        ceilDiv(max(0, bytes) * 8, max(1, bitsPerChar))
    }

    /// Characters of base64 without padding (RFC 4648 3.2).
    public static func rawBase64Chars(_ bytes: Int) -> Int { bitPackedChars(bytes, bitsPerChar: 6) }

    /// Characters of padded base64 (RFC 4648 4).
    public static func paddedBase64Chars(_ bytes: Int) -> Int { 4 * ceilDiv(max(0, bytes), 3) }

    /// Characters of MasterDnsVPN Go's lower-case base36: 7-byte blocks become 11 characters, a tail
    /// of 1...6 bytes 2, 4, 5, 7, 8 or 10 (internal/basecodec/lowerbase36.go, EncodedLenLowerBase36).
    public static func base36Chars(_ bytes: Int) -> Int {
        let tail = [0, 2, 4, 5, 7, 8, 10, 11]
        let n = max(0, bytes)
        return n / 7 * 11 + tail[n % 7]
    }

    /// Text length of a name made of `chars` payload characters cut into labels of `labelSize`,
    /// then `extraLabels` further labels of the given lengths, then the domain.
    public static func nameText(payloadChars chars: Int, labelSize: Int, extraLabels: [Int] = [], domainLength d: Int) -> Int {
        let c = max(0, chars)
        let labels = c == 0 ? 0 : ceilDiv(c, max(1, labelSize))
        let parts = labels + extraLabels.count
        // Each label before the domain is followed by one dot.
        return c + extraLabels.reduce(0, +) + parts + max(0, d)
    }

    /// Wire length of the question section for a name of `text` characters: the name (text + 2
    /// octets: the first length byte and the root), QTYPE and QCLASS (RFC 1035 4.1.2).
    public static func questionBytes(nameText text: Int) -> Int { max(0, text) + 2 + 4 }

    /// Size of the response message a resolver sends to its client: header, question, each answer
    /// record with its owner name compressed to a pointer (resolvers re-encode what they relay),
    /// and the resolver's own OPT record.
    public static func responseBytes(questionNameText text: Int, rdataLengths: [Int], opt: Bool = true) -> Int {
        headerBytes + questionBytes(nameText: text)
            + rdataLengths.reduce(0) { $0 + compressedName + recordFixed + max(0, $1) }
            + (opt ? optRecord : 0)
    }

    /// RDATA length of one TXT record holding `bytes` octets cut into character-strings of at most
    /// `stringSize` octets, each with its length byte.
    public static func txtRdata(_ bytes: Int, stringSize: Int = maxCharacterString) -> Int {
        let n = max(0, bytes)
        return n + max(1, ceilDiv(n, max(1, stringSize)))
    }

    /// Largest `x` in `range` for which `fits` holds, assuming `fits` is monotone (true up to a
    /// point, false after); nil when it holds for none.
    public static func largest(in range: ClosedRange<Int>, where fits: (Int) -> Bool) -> Int? {
        guard fits(range.lowerBound) else { return nil }
        var low = range.lowerBound, high = range.upperBound
        while low < high {
            let mid = low + (high - low + 1) / 2
            if fits(mid) { low = mid } else { high = mid - 1 }
        }
        return low
    }

    static func ceilDiv(_ a: Int, _ b: Int) -> Int { b <= 0 ? 0 : (max(0, a) + b - 1) / b }
}
