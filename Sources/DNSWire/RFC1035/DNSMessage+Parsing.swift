extension DNSMessage {
    /// Parses one message. Total: any input gives a message or a `DNSWireError`.
    ///
    /// Bytes after the last record are ignored (RFC 1035 does not forbid them and some
    /// middleboxes pad). An OPT record is moved into `edns`; a second OPT, an OPT outside the
    /// additional section, or one whose owner is not the root is `.valueOutOfRange` (a FORMERR
    /// condition, RFC 6891 6.1.1).
    public init(parsing bytes: UnsafeRawBufferPointer) throws(DNSWireError) {
        var reader = WireReader(bytes)
        self = try reader.readMessage()
    }

    public init(parsing bytes: [UInt8]) throws(DNSWireError) {
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(DNSWireError) in try DNSMessage(parsing: raw) }
        }
        self = try result.get()
    }

    /// Any contiguous byte collection (ArraySlice, ByteBuffer views, ...); offsets in errors
    /// count from its first element. Non-contiguous collections are copied first.
    public init<Bytes: RandomAccessCollection>(parsing bytes: Bytes) throws(DNSWireError)
    where Bytes.Element == UInt8, Bytes.Index == Int {
        let result = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(DNSWireError) in try DNSMessage(parsing: UnsafeRawBufferPointer(buffer)) }
        }
        if let result {
            self = try result.get()
        } else {
            self = try DNSMessage(parsing: Array(bytes))
        }
    }
}

extension WireReader {
    /// Smallest encodings: a question is a root name plus TYPE and CLASS; a record adds TTL and
    /// RDLENGTH. Checking the counts against them up front means a 12-byte header that claims
    /// 65535 records fails at once instead of reserving room for them.
    static let minimumQuestionLength = 5
    static let minimumRecordLength = 11

    mutating func readMessage() throws(DNSWireError) -> DNSMessage {
        guard bytes.count >= 12 else {
            throw DNSWireError(.truncated, at: bytes.count, "a header needs 12 bytes, the message has \(bytes.count)")
        }
        let id = try readU16("header")
        let flags = try readU16("header")
        let questionCount = Int(try readU16("header"))
        let answerCount = Int(try readU16("header"))
        let authorityCount = Int(try readU16("header"))
        let additionalCount = Int(try readU16("header"))

        let recordCount = answerCount + authorityCount + additionalCount
        let minimum = questionCount * WireReader.minimumQuestionLength + recordCount * WireReader.minimumRecordLength
        guard minimum <= bytes.count - offset else {
            throw DNSWireError(
                .truncated, at: offset,
                "header counts \(questionCount) questions and \(recordCount) records, which need at least \(minimum) bytes, but \(bytes.count - offset) follow"
            )
        }

        var message = DNSMessage(header: DNSHeader(id: id, flags: flags))
        message.questions.reserveCapacity(questionCount)
        for _ in 0..<questionCount {
            message.questions.append(try readQuestion())
        }
        message.answers = try readSection(answerCount, "answer")
        message.authorities = try readSection(authorityCount, "authority")

        // Usually the one additional record is the OPT, which goes to `edns`: no room reserved for it.
        if additionalCount > 1 { message.additionals.reserveCapacity(additionalCount) }
        for _ in 0..<additionalCount {
            let recordStart = offset
            let record = try readRecord()
            guard case .opt(let options) = record.rdata else {
                message.additionals.append(record)
                continue
            }
            guard message.edns == nil else {
                throw DNSWireError(.valueOutOfRange, at: recordStart, "second OPT record at offset \(recordStart) (RFC 6891 6.1.1)")
            }
            guard record.name.isRoot else {
                throw DNSWireError(.valueOutOfRange, at: recordStart, "OPT record at offset \(recordStart) has owner \(record.name), not the root")
            }
            message.edns = EDNS(payloadSize: record.rawClass, ttl: record.ttl, options: options)
        }
        return message
    }

    mutating func readQuestion() throws(DNSWireError) -> DNSQuestion {
        let name = try readName()
        let type = DNSType(rawValue: try readU16("question"))
        let dnsClass = DNSClass(rawValue: try readU16("question"))
        return DNSQuestion(name: name, type: type, dnsClass: dnsClass)
    }

    private mutating func readSection(_ count: Int, _ section: StaticString) throws(DNSWireError) -> [DNSResourceRecord] {
        var records: [DNSResourceRecord] = []
        records.reserveCapacity(count)
        for _ in 0..<count {
            let recordStart = offset
            let record = try readRecord()
            guard record.type != .opt else {
                throw DNSWireError(.valueOutOfRange, at: recordStart, "OPT record at offset \(recordStart) in the \(section) section (RFC 6891 6.1.1)")
            }
            records.append(record)
        }
        return records
    }

    /// One RR (RFC 1035 4.1.3). RDATA is decoded against exactly RDLENGTH bytes.
    mutating func readRecord() throws(DNSWireError) -> DNSResourceRecord {
        let name = try readName()
        let type = DNSType(rawValue: try readU16("record header"))
        let rawClass = try readU16("record header")
        let ttl = try readU32("record header")
        let rdataLength = Int(try readU16("record header"))
        guard rdataLength <= limit - offset else {
            throw DNSWireError(.truncated, at: offset, "RDLENGTH \(rdataLength) at offset \(offset - 2) runs past the end of the message")
        }
        let rdataEnd = offset + rdataLength
        let outerLimit = limit
        limit = rdataEnd
        overrunCode = .rdataLengthMismatch
        let rdata = try readRData(type: type, length: rdataLength)
        guard offset == rdataEnd else {
            throw DNSWireError(.rdataLengthMismatch, at: offset, "\(type) RDATA ends at offset \(offset) but RDLENGTH says \(rdataEnd)")
        }
        limit = outerLimit
        overrunCode = .truncated
        return DNSResourceRecord(name: name, type: type, rawClass: rawClass, ttl: ttl, rdata: rdata)
    }

    private mutating func readRData(type: DNSType, length: Int) throws(DNSWireError) -> DNSRData {
        switch type {
        case .a:
            try expectLength(length, 4, type)
            return .a(try readBytes(4, "A address"))
        case .aaaa:
            try expectLength(length, 16, type)
            return .aaaa(try readBytes(16, "AAAA address"))
        case .ns:
            return .ns(try readName())
        case .cname:
            return .cname(try readName())
        case .ptr:
            return .ptr(try readName())
        case .mx:
            let preference = try readU16("MX preference")
            return .mx(preference: preference, exchange: try readName())
        case .txt:
            // RFC 1035 3.3.14: <character-string>s back to back until RDLENGTH is used up.
            var strings: [[UInt8]] = []
            while offset < limit {
                let count = Int(try readU8("TXT string length"))
                strings.append(try readBytes(count, "TXT string"))
            }
            return .txt(strings)
        case .null:
            return .null(try readBytes(length, "NULL data"))
        case .srv:
            let priority = try readU16("SRV priority")
            let weight = try readU16("SRV weight")
            let port = try readU16("SRV port")
            return .srv(priority: priority, weight: weight, port: port, target: try readName())
        case .soa:
            let mname = try readName()
            let rname = try readName()
            return .soa(
                mname: mname, rname: rname,
                serial: try readU32("SOA serial"), refresh: try readU32("SOA refresh"),
                retry: try readU32("SOA retry"), expire: try readU32("SOA expire"),
                minimum: try readU32("SOA minimum")
            )
        case .opt:
            // RFC 6891 6.1.2: {OPTION-CODE, OPTION-LENGTH, OPTION-DATA} until RDLENGTH is used up.
            var options: [EDNSOption] = []
            while offset < limit {
                let code = try readU16("EDNS option code")
                let count = Int(try readU16("EDNS option length"))
                options.append(EDNSOption(code: code, data: try readBytes(count, "EDNS option data")))
            }
            return .opt(options)
        default:
            return .unknown(try readBytes(length, "RDATA"))
        }
    }

    private func expectLength(_ length: Int, _ expected: Int, _ type: DNSType) throws(DNSWireError) {
        guard length == expected else {
            throw DNSWireError(.rdataLengthMismatch, at: offset - 2, "\(type) RDATA has \(length) bytes, not \(expected)")
        }
    }
}
