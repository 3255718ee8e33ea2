public import DNSWire

/// What the relay reads from a datagram: its size and, when it parses as DNS, the id and the first
/// question. Non-DNS datagrams are still relayed and logged, without these fields.
public struct DatagramInfo: Sendable, Hashable {
    public var size: Int
    public var id: UInt16?
    public var isResponse: Bool
    public var question: DNSQuestion?
    /// The QNAME in presentation form without the trailing dot (`DNSName.description`).
    public var qname: String?

    public init(size: Int, id: UInt16? = nil, isResponse: Bool = false, question: DNSQuestion? = nil) {
        self.size = size
        self.id = id
        self.isResponse = isResponse
        self.question = question
        self.qname = question.map { $0.name.description }
    }

    /// Reads the header and first question (`DNSMessage.summary`, total: bad bytes give a non-DNS
    /// datagram, never a trap).
    public init(bytes: UnsafeRawBufferPointer) {
        if let summary = try? DNSMessage.summary(parsing: bytes) {
            self.init(size: bytes.count, id: summary.header.id, isResponse: summary.header.isResponse,
                      question: summary.question)
        } else {
            self.init(size: bytes.count)
        }
    }

    public var isDNS: Bool { id != nil }

    /// QNAME length in characters as `--max-qname` counts it: presentation form without the
    /// trailing dot (`DNSName.textLength`, the 253-character limit people quote).
    public var qnameLength: Int? { question?.name.textLength }
}

/// The answers the relay writes itself: SERVFAIL for an injected failure, and the truncated form
/// of an oversized response.
public enum SyntheticResponse {
    /// Header + question with TC set and no records, as a resolver answers when the response does
    /// not fit the client's UDP size (RFC 1035 section 4.2.1, RFC 2181 section 9). Keeps id,
    /// opcode, AA, RD, RA, AD, CD and RCODE of the original response.
    public static func truncated(original bytes: UnsafeRawBufferPointer, info: DatagramInfo) -> [UInt8] {
        let flags = UInt16(bytes[2]) << 8 | UInt16(bytes[3])
        return message(id: info.id ?? 0, flags: flags | 0x0200, question: info.question)
    }

    /// SERVFAIL (RCODE 2, RFC 1035 section 4.1.1) to a query: QR and RA set, opcode, RD and CD
    /// copied, the question echoed, no records.
    public static func servfail(query bytes: UnsafeRawBufferPointer, info: DatagramInfo) -> [UInt8] {
        let queryFlags = UInt16(bytes[2]) << 8 | UInt16(bytes[3])
        let kept = queryFlags & (0x7800 | 0x0100 | 0x0010)  // OPCODE, RD, CD
        return message(id: info.id ?? 0, flags: 0x8000 | 0x0080 | kept | 2, question: info.question)
    }

    private static func message(id: UInt16, flags: UInt16, question: DNSQuestion?) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(12 + (question?.name.wireLength ?? 0) + 4)
        func u16(_ v: UInt16) { out.append(UInt8(v >> 8)); out.append(UInt8(v & 0xff)) }
        u16(id)
        u16(flags)
        u16(question == nil ? 0 : 1)
        u16(0)
        u16(0)
        u16(0)
        if let question {
            for label in question.name.labels {
                out.append(UInt8(label.count))
                out += label
            }
            out.append(0)
            u16(question.type.rawValue)
            u16(question.dnsClass.rawValue)
        }
        return out
    }
}
