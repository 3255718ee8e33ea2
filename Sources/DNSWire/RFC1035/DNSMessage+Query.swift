extension DNSMessage {
    /// A query with one question in class IN (RFC 1035 4.1.1, 4.1.2): RD set when it goes to a
    /// recursive resolver, and an OPT record advertising `udpPayloadSize` when given (RFC 6891 6.1.2).
    public static func query(
        id: UInt16,
        name: String,
        type: DNSType,
        recursionDesired: Bool = true,
        udpPayloadSize: UInt16? = nil
    ) throws(DNSWireError) -> DNSMessage {
        DNSMessage(
            header: DNSHeader(id: id, recursionDesired: recursionDesired),
            questions: [DNSQuestion(name: try DNSName(name), type: type)],
            edns: udpPayloadSize.map { EDNS(udpPayloadSize: $0) }
        )
    }

    /// The wire bytes of a one-question query in class IN with only RD possibly set and an OPT record
    /// advertising `udpPayloadSize` (no options) when given: byte for byte what `serialized()` makes of
    /// `DNSMessage(header: DNSHeader(id: id, recursionDesired: recursionDesired), questions: [question],
    /// edns: udpPayloadSize.map { EDNS(udpPayloadSize: $0) })` (its one name has no earlier suffix to
    /// point at), without the message, its arrays and the compression table (one probe per query).
    public static func queryBytes(id: UInt16, name: DNSName, type: DNSType, recursionDesired: Bool = true,
                                  udpPayloadSize: UInt16? = nil) -> [UInt8] {
        let storage = name.storage
        let count = 12 + storage.count + 1 + 4 + (udpPayloadSize == nil ? 0 : 11)
        return [UInt8](unsafeUninitializedCapacity: count) { out, initialized in
            var at = 0
            func u8(_ value: UInt8) {
                out[at] = value
                at += 1
            }
            func u16(_ value: UInt16) {
                u8(UInt8(truncatingIfNeeded: value >> 8))
                u8(UInt8(truncatingIfNeeded: value))
            }
            u16(id)
            // QR 0, opcode QUERY, RD as asked, rcode 0 (RFC 1035 4.1.1).
            u16(recursionDesired ? 0x0100 : 0)
            u16(1)
            u16(0)
            u16(0)
            u16(udpPayloadSize == nil ? 0 : 1)
            for byte in storage { u8(byte) }
            u8(0)
            u16(type.rawValue)
            u16(DNSClass.in.rawValue)
            if let udpPayloadSize {
                // RFC 6891 6.1.2: root owner, TYPE OPT, CLASS the payload size, TTL 0, RDLENGTH 0.
                u8(0)
                u16(DNSType.opt.rawValue)
                u16(udpPayloadSize)
                u16(0)
                u16(0)
                u16(0)
            }
            initialized = at
        }
    }
}
