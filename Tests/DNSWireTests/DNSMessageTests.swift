import DNSWire
import Testing

@Suite("DNSMessage round trips")
struct DNSMessageTests {
    @Test(arguments: [true, false])
    func everyRecordTypeRoundTrips(compress: Bool) throws {
        let message = Fixtures.everyType
        let bytes = try message.serialized(compress: compress)
        let parsed = try DNSMessage(parsing: bytes)
        #expect(parsed == message)
        // Record by record, so a failure names the type.
        for (original, back) in zip(message.answers + message.authorities + message.additionals,
                                    parsed.answers + parsed.authorities + parsed.additionals) {
            #expect(original == back, "\(original.type)")
        }
    }

    @Test func eachTypeAloneRoundTrips() throws {
        for record in Fixtures.everyType.answers + Fixtures.everyType.authorities {
            let message = DNSMessage(header: DNSHeader(id: 7, isResponse: true), answers: [record])
            for compress in [true, false] {
                #expect(try DNSMessage(parsing: message.serialized(compress: compress)) == message, "\(record.type)")
            }
        }
    }

    @Test func exactBytesOfASimpleQuery() throws {
        let message = DNSMessage(
            header: DNSHeader(id: 0x1234, recursionDesired: true),
            questions: [DNSQuestion(name: Fixtures.name("example.com"), type: .a)]
        )
        let expected: [UInt8] = [0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0] + Fixtures.exampleCom + Fixtures.typeAClassIN
        #expect(try message.serialized() == expected)
        #expect(try DNSMessage(parsing: expected) == message)
    }

    @Test func headerFlagsEachBit() throws {
        let flags: [(WritableKeyPath<DNSHeader, Bool>, UInt16)] = [
            (\.isResponse, 0x8000), (\.authoritative, 0x0400), (\.truncated, 0x0200),
            (\.recursionDesired, 0x0100), (\.recursionAvailable, 0x0080),
            (\.authenticData, 0x0020), (\.checkingDisabled, 0x0010),
        ]
        for (path, bit) in flags {
            var header = DNSHeader(id: 1)
            header[keyPath: path] = true
            let bytes = try DNSMessage(header: header).serialized()
            #expect(UInt16(bytes[2]) << 8 | UInt16(bytes[3]) == bit)
            #expect(try DNSMessage(parsing: bytes).header == header)
        }
        let header = DNSHeader(id: 0xFFFF, opcode: .update, rcode: .refused)
        let bytes = try DNSMessage(header: header).serialized()
        #expect(bytes[2] == 5 << 3 && bytes[3] == 5)
        #expect(try DNSMessage(parsing: bytes).header == header)
    }

    @Test func headerZBitIsIgnored() throws {
        var bytes = try DNSMessage(header: DNSHeader(id: 9)).serialized()
        bytes[3] |= 0x40
        #expect(try DNSMessage(parsing: bytes) == DNSMessage(header: DNSHeader(id: 9)))
    }

    @Test func ednsWithOptionsAndExtendedRcode() throws {
        var message = DNSMessage(
            header: DNSHeader(id: 2, isResponse: true),
            questions: [DNSQuestion(name: Fixtures.name("x.example"), type: .txt)],
            edns: EDNS(udpPayloadSize: 4096, version: 0, dnssecOK: true,
                       options: [EDNSOption(code: 10, data: Array(0..<16)), EDNSOption(code: 65001, data: [0xAA])])
        )
        message.rcode = .badVers
        #expect(message.header.rcode == .noError)
        #expect(message.edns?.extendedRcodeHigh == 1)
        let bytes = try message.serialized()
        let parsed = try DNSMessage(parsing: bytes)
        #expect(parsed == message)
        #expect(parsed.rcode == .badVers)
        #expect(parsed.rcode.description == "BADVERS")
        #expect(parsed.additionals.isEmpty)
        #expect(parsed.edns?.options.count == 2)

        // 12-bit rcode 0xABC: low 4 bits in the header, high 8 in OPT TTL (RFC 6891 6.1.3).
        message.rcode = DNSRcode(rawValue: 0xABC)
        let extended = try message.serialized()
        #expect(extended[3] & 0x0F == 0xC)
        #expect(try DNSMessage(parsing: extended).rcode.rawValue == 0xABC)
    }

    @Test func settingAnExtendedRcodeAddsEDNS() {
        var message = DNSMessage()
        message.rcode = .servFail
        #expect(message.edns == nil)
        message.rcode = .badVers
        #expect(message.edns?.extendedRcodeHigh == 1)
        #expect(message.rcode == .badVers)
    }

    @Test func optIsWrittenFirstInAdditionals() throws {
        var message = Fixtures.everyType
        message.additionals = [DNSResourceRecord(name: Fixtures.name("a.example"), ttl: 1, rdata: .a([1, 2, 3, 4]))]
        message.answers = []
        message.authorities = []
        let bytes = try message.serialized()
        let summary = try DNSMessage.summary(parsing: bytes)
        #expect(summary.udpPayloadSize == 1232)
        #expect(try DNSMessage(parsing: bytes) == message)
    }

    @Test func parsesFromSlicesAndRawBuffers() throws {
        let bytes = try Fixtures.everyType.serialized()
        let framed: [UInt8] = [0xEE, 0xEE] + bytes
        #expect(try DNSMessage(parsing: framed[2...]) == Fixtures.everyType)
        let fromRaw = try bytes.withUnsafeBytes { raw in try DNSMessage(parsing: raw) }
        #expect(fromRaw == Fixtures.everyType)
    }

    @Test func serializeAppendsAfterAPrefix() throws {
        // A TCP length prefix (RFC 1035 4.2.2): compression offsets must count from the message.
        var buffer: [UInt8] = [0, 0]
        try Fixtures.everyType.serialize(into: &buffer)
        #expect(try DNSMessage(parsing: buffer[2...]) == Fixtures.everyType)
        #expect(Array(buffer[2...]) == (try Fixtures.everyType.serialized()))
    }

    @Test func trailingBytesAreIgnored() throws {
        let bytes = try Fixtures.tunnelQuery.serialized() + [1, 2, 3]
        #expect(try DNSMessage(parsing: bytes) == Fixtures.tunnelQuery)
    }

    @Test func emptyTXTRDataReadsAsNoStrings() throws {
        let message = DNSMessage(answers: [DNSResourceRecord(name: .root, ttl: 0, rdata: .txt([]))])
        let bytes = try message.serialized()
        #expect(bytes.suffix(2) == [0, 0])
        #expect(try DNSMessage(parsing: bytes) == message)
    }

    @Test func unknownDataUnderAKnownTypeReadsAsThatType() throws {
        // Allowed on write (for deliberately odd answers); read back it decodes as A.
        let record = DNSResourceRecord(name: .root, type: .a, rawClass: 1, ttl: 0, rdata: .unknown([10, 0, 0, 1]))
        let parsed = try DNSMessage(parsing: DNSMessage(answers: [record]).serialized())
        #expect(parsed.answers.first?.rdata == .a([10, 0, 0, 1]))
    }
}
