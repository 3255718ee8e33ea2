/// What the relay reads from a datagram: its size and, when it is DNS, the header id and QR bit and
/// the first question. Non-DNS datagrams are still relayed and logged, without these fields.
///
/// Read in place without allocating (the relay does this for every datagram): the header (RFC 1035
/// section 4.1.1) and the first question's labels, which follow it uncompressed (section 4.1.2;
/// a compression pointer there could only point into the header). The bytes count as DNS when
/// `DNSMessage.summary` would accept them: a full header and, when QDCOUNT > 0, a well-formed first
/// question (labels of 1...63 octets, a name of at most 255 octets, TYPE and CLASS present).
public struct DatagramInfo: Sendable, Hashable {
    public var size: Int
    public var id: UInt16?
    public var isResponse: Bool
    /// The first question's QTYPE, when there is a question.
    public var qtype: UInt16?
    /// QNAME length as `--X-max-qname` counts it: presentation form without the trailing dot,
    /// escapes counted as written (`DNSName.textLength`).
    public var qnameLength: Int?
    /// Offset just past the first question: `bytes[12..<questionEnd]` is the question.
    public var questionEnd: Int?

    public init(size: Int, id: UInt16? = nil, isResponse: Bool = false, qtype: UInt16? = nil, qnameLength: Int? = nil, questionEnd: Int? = nil) {
        self.size = size
        self.id = id
        self.isResponse = isResponse
        self.qtype = qtype
        self.qnameLength = qnameLength
        self.questionEnd = questionEnd
    }

    public init(bytes b: UnsafeRawBufferPointer) {
        self.init(size: b.count)
        guard b.count >= 12 else { return }
        let questions = Int(b[4]) << 8 | Int(b[5])
        if questions > 0 {
            var i = 12
            var wire = 1
            var text = -1
            while true {
                guard i < b.count else { return }
                let length = Int(b[i])
                if length == 0 { break }
                // 0xC0 pointers and the 0x40/0x80 label types are not plain labels.
                guard length <= 63, i + 1 + length <= b.count else { return }
                wire += length + 1
                guard wire <= 255 else { return }
                text += 1
                for byte in b[(i + 1)...(i + length)] { text += Self.escapedWidth(byte) }
                i += 1 + length
            }
            guard i + 5 <= b.count else { return }
            qtype = UInt16(b[i + 1]) << 8 | UInt16(b[i + 2])
            qnameLength = max(0, text)
            questionEnd = i + 5
        }
        id = UInt16(b[0]) << 8 | UInt16(b[1])
        isResponse = b[2] & 0x80 != 0
    }

    public var isDNS: Bool { id != nil }

    /// Width of a QNAME octet in presentation form, as `DNSName.description` writes it.
    @inline(__always) static func escapedWidth(_ byte: UInt8) -> Int {
        if byte == UInt8(ascii: ".") || byte == UInt8(ascii: "\\") { return 2 }
        if byte < 0x21 || byte > 0x7E { return 4 }
        return 1
    }

    /// Appends the first question's QNAME in presentation form (as `DNSName.description`: no
    /// trailing dot, "." for the root, `\.` `\\` `\DDD` escapes), escaped for a JSON string.
    static func appendQName(_ b: UnsafeRawBufferPointer, questionEnd: Int, to out: inout [UInt8]) {
        var i = 12
        if b[i] == 0 {
            out.append(UInt8(ascii: "."))
            return
        }
        while i < questionEnd, b[i] != 0 {
            if i > 12 { out.append(UInt8(ascii: ".")) }
            let length = Int(b[i])
            for byte in b[(i + 1)...(i + length)] {
                switch escapedWidth(byte) {
                case 1:
                    if byte == UInt8(ascii: "\"") { out.append(UInt8(ascii: "\\")) }
                    out.append(byte)
                case 2:
                    // DNS `\.` or `\\`; each backslash doubled for JSON.
                    out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
                    if byte == UInt8(ascii: "\\") { out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")] } else { out.append(byte) }
                default:
                    out += [UInt8(ascii: "\\"), UInt8(ascii: "\\"), 48 + byte / 100, 48 + (byte / 10) % 10, 48 + byte % 10]
                }
            }
            i += 1 + length
        }
    }
}

/// The answers the relay writes itself: SERVFAIL for an injected failure, and the truncated form
/// of an oversized response. Both copy the question as received.
public enum SyntheticResponse {
    /// Header + question with TC set and no records, as a resolver answers when the response does
    /// not fit the client's UDP size (RFC 1035 section 4.2.1, RFC 2181 section 9). Keeps id,
    /// opcode, AA, RD, RA, AD, CD and RCODE of the original response.
    public static func truncated(original bytes: UnsafeRawBufferPointer, info: DatagramInfo) -> [UInt8] {
        let flags = UInt16(bytes[2]) << 8 | UInt16(bytes[3])
        return message(bytes, id: info.id ?? 0, flags: flags | 0x0200, questionEnd: info.questionEnd)
    }

    /// SERVFAIL (RCODE 2, RFC 1035 section 4.1.1) to a query: QR and RA set, opcode, RD and CD
    /// copied, the question echoed, no records.
    public static func servfail(query bytes: UnsafeRawBufferPointer, info: DatagramInfo) -> [UInt8] {
        let queryFlags = UInt16(bytes[2]) << 8 | UInt16(bytes[3])
        let kept = queryFlags & (0x7800 | 0x0100 | 0x0010)  // OPCODE, RD, CD
        return message(bytes, id: info.id ?? 0, flags: 0x8000 | 0x0080 | kept | 2, questionEnd: info.questionEnd)
    }

    /// REFUSED (rcode 5) for the query, as a rate-limiting resolver answers the excess.
    public static func refused(query bytes: UnsafeRawBufferPointer, info: DatagramInfo) -> [UInt8] {
        let queryFlags = UInt16(bytes[2]) << 8 | UInt16(bytes[3])
        let kept = queryFlags & (0x7800 | 0x0100 | 0x0010)  // OPCODE, RD, CD
        return message(bytes, id: info.id ?? 0, flags: 0x8000 | 0x0080 | kept | 5, questionEnd: info.questionEnd)
    }

    private static func message(_ bytes: UnsafeRawBufferPointer, id: UInt16, flags: UInt16, questionEnd: Int?) -> [UInt8] {
        var out: [UInt8] = [UInt8(id >> 8), UInt8(id & 0xff), UInt8(flags >> 8), UInt8(flags & 0xff),
                            0, questionEnd == nil ? 0 : 1, 0, 0, 0, 0, 0, 0]
        if let end = questionEnd, end <= bytes.count { out += bytes[12..<end] }
        return out
    }
}
