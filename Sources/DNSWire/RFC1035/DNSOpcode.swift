/// The 4-bit header OPCODE (RFC 1035 4.1.1).
public struct DNSOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible, ExpressibleByIntegerLiteral {
    public var rawValue: UInt8

    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public init(integerLiteral value: UInt8) { self.rawValue = value }

    public static let query: DNSOpcode = 0
    public static let iquery: DNSOpcode = 1
    public static let status: DNSOpcode = 2
    /// RFC 1996.
    public static let notify: DNSOpcode = 4
    /// RFC 2136.
    public static let update: DNSOpcode = 5

    public var description: String {
        switch self {
        case .query: "QUERY"
        case .iquery: "IQUERY"
        case .status: "STATUS"
        case .notify: "NOTIFY"
        case .update: "UPDATE"
        default: "OPCODE\(rawValue)"
        }
    }
}
