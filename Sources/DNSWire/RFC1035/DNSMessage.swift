/// A whole DNS message (RFC 1035 4.1) with EDNS lifted out of the additional section.
///
/// Parsing is total: every byte string gives a message or a `DNSWireError`, never a trap
/// (see `DNSMessage+Parsing.swift`). Serializing checks every limit the wire format has.
public struct DNSMessage: Hashable, Sendable {
    public var header: DNSHeader
    public var questions: [DNSQuestion]
    public var answers: [DNSResourceRecord]
    public var authorities: [DNSResourceRecord]
    /// Without the OPT record; that lives in `edns`.
    public var additionals: [DNSResourceRecord]
    public var edns: EDNS?

    public init(
        header: DNSHeader = DNSHeader(),
        questions: [DNSQuestion] = [],
        answers: [DNSResourceRecord] = [],
        authorities: [DNSResourceRecord] = [],
        additionals: [DNSResourceRecord] = [],
        edns: EDNS? = nil
    ) {
        self.header = header
        self.questions = questions
        self.answers = answers
        self.authorities = authorities
        self.additionals = additionals
        self.edns = edns
    }

    /// The 12-bit rcode: header low 4 bits plus the OPT record's high 8 (RFC 6891 6.1.3).
    /// Setting a value above 15 without EDNS adds a default `EDNS()`, because such an rcode
    /// cannot be sent any other way; bits above 12 are dropped.
    public var rcode: DNSRcode {
        get {
            let high = UInt16(edns?.extendedRcodeHigh ?? 0)
            return DNSRcode(rawValue: high << 4 | (header.rcode.rawValue & 0x0F))
        }
        set {
            header.rcode = DNSRcode(rawValue: newValue.rawValue & 0x0F)
            let high = UInt8(truncatingIfNeeded: newValue.rawValue >> 4)
            if edns != nil {
                edns?.extendedRcodeHigh = high
            } else if high != 0 {
                edns = EDNS(extendedRcodeHigh: high)
            }
        }
    }
}
