extension DNSMessage {
    /// The message in wire format. With `compress`, owner and question names and the names
    /// inside NS, CNAME, PTR, MX and SOA data point at identical (byte-equal, case included)
    /// suffixes written earlier; SRV targets and unknown data are never compressed.
    ///
    /// Throws for anything the format cannot carry: more than 65535 entries in a section
    /// (`.recordCountTooLarge`), a header rcode or opcode over 4 bits, a TXT string over 255
    /// bytes, RDATA over 65535 bytes, typed data under another type, or an OPT record in a
    /// section (`.valueOutOfRange`), A/AAAA addresses of the wrong size (`.rdataLengthMismatch`).
    public func serialized(compress: Bool = true) throws(DNSWireError) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(512)
        try serialize(into: &out, compress: compress)
        return out
    }

    /// Appends the message to `buffer`; on error `buffer` is left as it was.
    public func serialize(into buffer: inout [UInt8], compress: Bool = true) throws(DNSWireError) {
        let start = buffer.count
        var writer = WireWriter(out: [], base: start, compress: compress)
        swap(&writer.out, &buffer)
        do throws(DNSWireError) {
            try writer.writeMessage(self)
        } catch {
            writer.out.removeSubrange(start...)
            swap(&writer.out, &buffer)
            throw error
        }
        swap(&writer.out, &buffer)
    }
}

extension WireWriter {
    mutating func writeMessage(_ message: DNSMessage) throws(DNSWireError) {
        let flags = try message.header.flags()
        let additionalCount = message.additionals.count + (message.edns == nil ? 0 : 1)
        try WireWriter.checkCount(message.questions.count, "question")
        try WireWriter.checkCount(message.answers.count, "answer")
        try WireWriter.checkCount(message.authorities.count, "authority")
        try WireWriter.checkCount(additionalCount, "additional")
        u16(message.header.id)
        u16(flags)
        u16(UInt16(truncatingIfNeeded: message.questions.count))
        u16(UInt16(truncatingIfNeeded: message.answers.count))
        u16(UInt16(truncatingIfNeeded: message.authorities.count))
        u16(UInt16(truncatingIfNeeded: additionalCount))
        for question in message.questions {
            writeQuestion(question)
        }
        for record in message.answers {
            try writeRecord(record)
        }
        for record in message.authorities {
            try writeRecord(record)
        }
        // OPT first in the additional section: RFC 6891 allows any position, TSIG and SIG(0)
        // must be last (RFC 8945 5.1), and a reader looking only for the payload size finds it
        // right after the question of a plain query.
        if let edns = message.edns {
            try writeOPT(edns)
        }
        for record in message.additionals {
            try writeRecord(record)
        }
    }

    /// Section counts are 16 bits (RFC 1035 4.1.1).
    private static func checkCount(_ count: Int, _ section: StaticString) throws(DNSWireError) {
        guard count <= 0xFFFF else {
            throw DNSWireError(.recordCountTooLarge, "\(count) entries in the \(section) section, more than 65535")
        }
    }
}
