/// An RR CLASS / QCLASS value (RFC 1035 3.2.4, 3.2.5). In an OPT record the same field holds the
/// requester's UDP payload size instead (RFC 6891 6.1.2), which `EDNS` models separately.
public struct DNSClass: RawRepresentable, Hashable, Sendable, CustomStringConvertible, ExpressibleByIntegerLiteral {
    public var rawValue: UInt16

    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(integerLiteral value: UInt16) { self.rawValue = value }

    public static let `in`: DNSClass = 1
    public static let chaos: DNSClass = 3
    public static let any: DNSClass = 255

    /// "IN", "CH", "ANY", otherwise the RFC 3597 5 generic form "CLASS7".
    public var description: String {
        switch self {
        case .in: "IN"
        case .chaos: "CH"
        case .any: "ANY"
        default: "CLASS\(rawValue)"
        }
    }
}
