/// Text encodings that carry binary payload inside DNS labels, as DNS tunnels use them.
///
/// Case matters: recursive resolvers may randomise or fold letter case (draft-vixie-dnsext-
/// dns0x20), so only the case-insensitive encodings survive every path. `isCaseSensitive`
/// says which ones need a resolver that preserves case.
public enum LabelEncoding: String, CaseIterable, Sendable, Codable {
    /// RFC 4648 6 alphabet lowercased, no padding; decoding accepts either case.
    case base32
    /// Big-integer base 36 over "0-9a-z" (MasterDnsVPN's lower base36): each leading zero byte
    /// is one leading '0', the rest is the big-endian integer, most significant digit first.
    /// Decoding accepts either case.
    case base36
    /// RFC 4648 5 alphabet, no padding; case-sensitive.
    case base64url
    /// 7 bits per character, iodine style: 62 letters and digits followed by the bytes
    /// 0xBC...0xFD, which labels can carry as raw octets; case-sensitive.
    case base128

    public var isCaseSensitive: Bool {
        switch self {
        case .base32, .base36: false
        case .base64url, .base128: true
        }
    }

    /// The characters (bytes) `encode` emits, in digit order.
    public var alphabet: [UInt8] {
        switch self {
        case .base32: LabelEncoding.base32Alphabet
        case .base36: LabelEncoding.base36Alphabet
        case .base64url: LabelEncoding.base64urlAlphabet
        case .base128: LabelEncoding.base128Alphabet
        }
    }

    /// Bits per character for the bit-packed encodings; nil for base36, which is positional.
    public var bitsPerCharacter: Int? {
        switch self {
        case .base32: 5
        case .base36: nil
        case .base64url: 6
        case .base128: 7
        }
    }

    public func encode(_ bytes: [UInt8]) -> [UInt8] {
        switch self {
        case .base32: BitPacking.encode(bytes, bits: 5, alphabet: LabelEncoding.base32Alphabet)
        case .base36: Base36.encode(bytes)
        case .base64url: BitPacking.encode(bytes, bits: 6, alphabet: LabelEncoding.base64urlAlphabet)
        case .base128: BitPacking.encode(bytes, bits: 7, alphabet: LabelEncoding.base128Alphabet)
        }
    }

    /// As `encode(_:)`, from bytes in place (a probe's meta block is built on the stack).
    public func encode(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        switch self {
        case .base32: BitPacking.encode(bytes, bits: 5, alphabet: LabelEncoding.base32Alphabet)
        case .base36: Base36.encode(Array(bytes))
        case .base64url: BitPacking.encode(bytes, bits: 6, alphabet: LabelEncoding.base64urlAlphabet)
        case .base128: BitPacking.encode(bytes, bits: 7, alphabet: LabelEncoding.base128Alphabet)
        }
    }

    /// Writes the base32 characters of `bytes` at `out` (ceil(8n / 5) of them, returned): a probe's
    /// meta block straight into the datagram it goes out in, with no array per probe.
    public static func base32(_ bytes: UnsafeRawBufferPointer, into out: UnsafeMutableRawPointer) -> Int {
        BitPacking.encode(bytes, bits: 5, alphabet: base32Alphabet, into: out)
    }

    /// Throws `.invalidEncoding` at the offset of the first character outside the alphabet. The
    /// bit-packed encodings also refuse lengths no byte count encodes to and nonzero padding
    /// bits, so every accepted text is the one canonical encoding of its bytes.
    public func decode(_ chars: [UInt8]) throws(DNSWireError) -> [UInt8] {
        switch self {
        case .base32: try BitPacking.decode(chars, bits: 5, table: LabelEncoding.base32Table, name: "base32")
        case .base36: try Base36.decode(chars)
        case .base64url: try BitPacking.decode(chars, bits: 6, table: LabelEncoding.base64urlTable, name: "base64url")
        case .base128: try BitPacking.decode(chars, bits: 7, table: LabelEncoding.base128Table, name: "base128")
        }
    }

    /// Exact worst-case characters for `n` bytes: ceil(8n / bits), or for base36 the smallest
    /// c with 36^c >= 256^n (n bytes with a non-zero first byte; leading zeros never cost more).
    /// 0 for n <= 0; saturates at Int.max for absurd n.
    public func encodedLength(forBytes n: Int) -> Int {
        guard n > 0 else { return 0 }
        guard let bits = bitsPerCharacter else { return Base36.encodedLength(forBytes: n) }
        guard n <= Int.max / 8 - bits else { return Int.max }
        return (8 * n + bits - 1) / bits
    }

    /// Largest n with `encodedLength(forBytes: n) <= c`: floor(c * bits / 8), or for base36
    /// floor(log2(36^c) / 8). 0 for c <= 0.
    public func maxBytes(forCharacters c: Int) -> Int {
        guard c > 0 else { return 0 }
        guard let bits = bitsPerCharacter else { return Base36.maxBytes(forCharacters: c) }
        // Split so c * bits cannot overflow.
        return (c / 8) * bits + (c % 8) * bits / 8
    }

    // MARK: - Alphabets and reverse tables

    static let base32Alphabet: [UInt8] = Array("abcdefghijklmnopqrstuvwxyz234567".utf8)
    static let base36Alphabet: [UInt8] = Array("0123456789abcdefghijklmnopqrstuvwxyz".utf8)
    static let base64urlAlphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    static let base128Alphabet: [UInt8] =
        Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8) + Array(0xBC...0xFD)

    static let base32Table = reverseTable(base32Alphabet, caseInsensitive: true)
    static let base36Table = reverseTable(base36Alphabet, caseInsensitive: true)
    static let base64urlTable = reverseTable(base64urlAlphabet, caseInsensitive: false)
    static let base128Table = reverseTable(base128Alphabet, caseInsensitive: false)

    /// Byte -> digit value, `invalidDigit` for bytes outside the alphabet.
    static let invalidDigit: UInt8 = 0xFF

    private static func reverseTable(_ alphabet: [UInt8], caseInsensitive: Bool) -> [UInt8] {
        var table = [UInt8](repeating: invalidDigit, count: 256)
        for (value, char) in alphabet.enumerated() {
            table[Int(char)] = UInt8(value)
            if caseInsensitive, char >= UInt8(ascii: "a"), char <= UInt8(ascii: "z") {
                table[Int(char - 0x20)] = UInt8(value)
            }
        }
        return table
    }
}
