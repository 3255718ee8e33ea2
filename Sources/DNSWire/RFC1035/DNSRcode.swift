/// A response code. The header holds the low 4 bits (RFC 1035 4.1.1); with EDNS the OPT record
/// adds 8 high bits for a 12-bit value (RFC 6891 6.1.3), which is what `rawValue` holds here.
public struct DNSRcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible, ExpressibleByIntegerLiteral {
    public var rawValue: UInt16

    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(integerLiteral value: UInt16) { self.rawValue = value }

    public static let noError: DNSRcode = 0
    public static let formErr: DNSRcode = 1
    public static let servFail: DNSRcode = 2
    public static let nxDomain: DNSRcode = 3
    public static let notImp: DNSRcode = 4
    public static let refused: DNSRcode = 5
    /// RFC 6891 9: only expressible with an OPT record.
    public static let badVers: DNSRcode = 16

    /// "NOERROR", "SERVFAIL", ..., otherwise "RCODE23".
    public var description: String {
        switch self {
        case .noError: "NOERROR"
        case .formErr: "FORMERR"
        case .servFail: "SERVFAIL"
        case .nxDomain: "NXDOMAIN"
        case .notImp: "NOTIMP"
        case .refused: "REFUSED"
        case .badVers: "BADVERS"
        default: "RCODE\(rawValue)"
        }
    }
}
