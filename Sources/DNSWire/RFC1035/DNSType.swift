/// An RR TYPE / QTYPE value (RFC 1035 3.2.2, 3.2.3). Any 16-bit value is representable; unknown
/// ones print in the RFC 3597 5 generic form "TYPE65".
public struct DNSType: RawRepresentable, Hashable, Sendable, CustomStringConvertible, ExpressibleByIntegerLiteral {
    public var rawValue: UInt16

    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(_ rawValue: UInt16) { self.rawValue = rawValue }
    public init(integerLiteral value: UInt16) { self.rawValue = value }

    public static let a: DNSType = 1
    public static let ns: DNSType = 2
    public static let cname: DNSType = 5
    public static let soa: DNSType = 6
    public static let null: DNSType = 10
    public static let ptr: DNSType = 12
    public static let mx: DNSType = 15
    public static let txt: DNSType = 16
    public static let aaaa: DNSType = 28
    /// RFC 2782.
    public static let srv: DNSType = 33
    /// RFC 6891 6.1.1.
    public static let opt: DNSType = 41
    public static let any: DNSType = 255

    private static let mnemonics: [(String, DNSType)] = [
        ("A", .a), ("NS", .ns), ("CNAME", .cname), ("SOA", .soa), ("NULL", .null), ("PTR", .ptr),
        ("MX", .mx), ("TXT", .txt), ("AAAA", .aaaa), ("SRV", .srv), ("OPT", .opt), ("ANY", .any),
    ]

    /// Accepts the mnemonics above in any case, and "TYPEnnn" (RFC 3597 5) for any 16-bit value.
    public init?(name: String) {
        let upper = name.uppercased()
        if let match = DNSType.mnemonics.first(where: { $0.0 == upper }) {
            self = match.1
            return
        }
        guard upper.hasPrefix("TYPE"), let value = DNSType.decimal(upper.utf8.dropFirst(4)) else { return nil }
        self.rawValue = value
    }

    /// Strict decimal 0...65535: digits only, no sign, no empty string.
    internal static func decimal(_ digits: Substring.UTF8View) -> UInt16? {
        guard !digits.isEmpty, digits.count <= 5 else { return nil }
        var value = 0
        for byte in digits {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return UInt16(exactly: value)
    }

    public var description: String {
        DNSType.mnemonics.first(where: { $0.1 == self })?.0 ?? "TYPE\(rawValue)"
    }
}
