/// The fixed 12-byte header minus its four count fields (RFC 1035 4.1.1), which the message
/// derives from its sections. AD and CD are from RFC 4035 3.2; the remaining Z bit is dropped
/// on read and written as zero.
public struct DNSHeader: Hashable, Sendable {
    public var id: UInt16
    /// QR.
    public var isResponse: Bool
    public var opcode: DNSOpcode
    /// AA.
    public var authoritative: Bool
    /// TC.
    public var truncated: Bool
    /// RD.
    public var recursionDesired: Bool
    /// RA.
    public var recursionAvailable: Bool
    /// AD.
    public var authenticData: Bool
    /// CD.
    public var checkingDisabled: Bool
    /// Only the low 4 bits go in the header; `DNSMessage.rcode` combines them with the EDNS
    /// extended bits. Serializing a header rcode above 15 throws `.valueOutOfRange`.
    public var rcode: DNSRcode

    public init(
        id: UInt16 = 0,
        isResponse: Bool = false,
        opcode: DNSOpcode = .query,
        authoritative: Bool = false,
        truncated: Bool = false,
        recursionDesired: Bool = false,
        recursionAvailable: Bool = false,
        authenticData: Bool = false,
        checkingDisabled: Bool = false,
        rcode: DNSRcode = .noError
    ) {
        self.id = id
        self.isResponse = isResponse
        self.opcode = opcode
        self.authoritative = authoritative
        self.truncated = truncated
        self.recursionDesired = recursionDesired
        self.recursionAvailable = recursionAvailable
        self.authenticData = authenticData
        self.checkingDisabled = checkingDisabled
        self.rcode = rcode
    }

    /// Decodes the 16-bit flags word (RFC 1035 4.1.1 layout: QR, OPCODE, AA, TC, RD, RA, Z, AD, CD, RCODE).
    internal init(id: UInt16, flags: UInt16) {
        self.init(
            id: id,
            isResponse: flags & 0x8000 != 0,
            opcode: DNSOpcode(rawValue: UInt8(truncatingIfNeeded: (flags >> 11) & 0x0F)),
            authoritative: flags & 0x0400 != 0,
            truncated: flags & 0x0200 != 0,
            recursionDesired: flags & 0x0100 != 0,
            recursionAvailable: flags & 0x0080 != 0,
            authenticData: flags & 0x0020 != 0,
            checkingDisabled: flags & 0x0010 != 0,
            rcode: DNSRcode(rawValue: flags & 0x000F)
        )
    }

    /// The flags word; throws when the opcode or rcode do not fit their 4 bits.
    internal func flags() throws(DNSWireError) -> UInt16 {
        guard opcode.rawValue <= 0x0F else {
            throw DNSWireError(.valueOutOfRange, "opcode \(opcode.rawValue) does not fit in 4 bits")
        }
        guard rcode.rawValue <= 0x0F else {
            throw DNSWireError(.valueOutOfRange, "header rcode \(rcode.rawValue) does not fit in 4 bits; set DNSMessage.rcode so the high bits go to EDNS")
        }
        var flags = UInt16(opcode.rawValue) << 11 | rcode.rawValue
        if isResponse { flags |= 0x8000 }
        if authoritative { flags |= 0x0400 }
        if truncated { flags |= 0x0200 }
        if recursionDesired { flags |= 0x0100 }
        if recursionAvailable { flags |= 0x0080 }
        if authenticData { flags |= 0x0020 }
        if checkingDisabled { flags |= 0x0010 }
        return flags
    }
}
