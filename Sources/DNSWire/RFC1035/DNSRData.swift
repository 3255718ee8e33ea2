/// Record data, decoded for the types tunnels and probes use and kept raw otherwise.
///
/// The payload shapes carry their own limits, checked when serializing: A is exactly 4 bytes,
/// AAAA exactly 16, each TXT string at most 255, the whole RDATA at most 65535.
public enum DNSRData: Hashable, Sendable {
    /// Exactly 4 bytes (RFC 1035 3.4.1).
    case a([UInt8])
    /// Exactly 16 bytes (RFC 3596 2.2).
    case aaaa([UInt8])
    case ns(DNSName)
    case cname(DNSName)
    case ptr(DNSName)
    case mx(preference: UInt16, exchange: DNSName)
    /// One or more <character-string>s, each at most 255 bytes (RFC 1035 3.3.14). An empty
    /// RDATA (seen in the wild) reads as `.txt([])`.
    case txt([[UInt8]])
    /// Anything up to 65535 bytes (RFC 1035 3.3.10).
    case null([UInt8])
    /// RFC 2782; the target is never compressed when written.
    case srv(priority: UInt16, weight: UInt16, port: UInt16, target: DNSName)
    case soa(mname: DNSName, rname: DNSName, serial: UInt32, refresh: UInt32, retry: UInt32, expire: UInt32, minimum: UInt32)
    /// RFC 6891 6.1.2. Parsed messages keep OPT in `DNSMessage.edns`, never in a section.
    case opt([EDNSOption])
    /// RDATA of any other type, byte for byte (RFC 3597).
    case unknown([UInt8])

    /// The TYPE this data belongs to; nil for `.unknown`, whose type the record carries.
    public var naturalType: DNSType? {
        switch self {
        case .a: .a
        case .aaaa: .aaaa
        case .ns: .ns
        case .cname: .cname
        case .ptr: .ptr
        case .mx: .mx
        case .txt: .txt
        case .null: .null
        case .srv: .srv
        case .soa: .soa
        case .opt: .opt
        case .unknown: nil
        }
    }
}
