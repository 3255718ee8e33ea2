/// What matching a response to a query needs, read without decoding the whole message.
public struct DNSMessageSummary: Hashable, Sendable {
    public var header: DNSHeader
    /// The first question, if QDCOUNT is not zero.
    public var question: DNSQuestion?
    /// ANCOUNT as the header states it; the records are not read.
    public var answerCount: Int
    /// The OPT payload size, only when the OPT record directly follows a single question
    /// (no answer or authority records, OPT first in the additional section); nil otherwise.
    public var udpPayloadSize: UInt16?
    public var messageLength: Int

    public init(header: DNSHeader, question: DNSQuestion?, answerCount: Int, udpPayloadSize: UInt16?, messageLength: Int) {
        self.header = header
        self.question = question
        self.answerCount = answerCount
        self.udpPayloadSize = udpPayloadSize
        self.messageLength = messageLength
    }
}

extension DNSMessage {
    /// Header and first question only, for the hot path of trace analysis and query matching.
    /// Also total, but it checks less than `init(parsing:)`: a message whose later records are
    /// malformed can still summarise.
    public static func summary(parsing bytes: UnsafeRawBufferPointer) throws(DNSWireError) -> DNSMessageSummary {
        var reader = WireReader(bytes)
        guard bytes.count >= 12 else {
            throw DNSWireError(.truncated, at: bytes.count, "a header needs 12 bytes, the message has \(bytes.count)")
        }
        let id = try reader.readU16("header")
        let flags = try reader.readU16("header")
        let questionCount = try reader.readU16("header")
        let answerCount = try reader.readU16("header")
        let authorityCount = try reader.readU16("header")
        let additionalCount = try reader.readU16("header")
        let question = questionCount > 0 ? try reader.readQuestion() : nil

        var payloadSize: UInt16?
        if questionCount <= 1, answerCount == 0, authorityCount == 0, additionalCount > 0 {
            // Root owner (one zero octet), then TYPE 41, then CLASS = payload size (RFC 6891 6.1.2).
            let at = reader.offset
            if bytes.count - at >= 5, bytes[at] == 0, bytes[at + 1] == 0, bytes[at + 2] == 41 {
                payloadSize = UInt16(bytes[at + 3]) << 8 | UInt16(bytes[at + 4])
            }
        }
        return DNSMessageSummary(
            header: DNSHeader(id: id, flags: flags),
            question: question,
            answerCount: Int(answerCount),
            udpPayloadSize: payloadSize,
            messageLength: bytes.count
        )
    }

    public static func summary(parsing bytes: [UInt8]) throws(DNSWireError) -> DNSMessageSummary {
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(DNSWireError) in try DNSMessage.summary(parsing: raw) }
        }
        return try result.get()
    }
}
