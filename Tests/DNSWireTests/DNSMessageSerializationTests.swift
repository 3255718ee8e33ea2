import DNSWire
import Testing

/// What serialization refuses, and compression behaviour on write.
@Suite("DNSMessage serialization")
struct DNSMessageSerializationTests {
    static func answer(_ rdata: DNSRData) -> DNSMessage {
        DNSMessage(answers: [DNSResourceRecord(name: .root, ttl: 0, rdata: rdata)])
    }

    @Test func refusesWhatTheWireCannotCarry() {
        #expect(throws: DNSWireError(.valueOutOfRange, "")) {
            try Self.answer(.txt([[UInt8](repeating: 1, count: 256)])).serialized()
        }
        #expect(throws: DNSWireError(.rdataLengthMismatch, "")) { try Self.answer(.a([1, 2, 3, 4, 5])).serialized() }
        #expect(throws: DNSWireError(.rdataLengthMismatch, "")) { try Self.answer(.aaaa([1, 2, 3, 4])).serialized() }
        #expect(throws: DNSWireError(.valueOutOfRange, "")) {
            try Self.answer(.null([UInt8](repeating: 0, count: 65536))).serialized()
        }
        #expect(throws: DNSWireError(.valueOutOfRange, "")) {
            // 257 strings of 255 bytes: each is legal, the RDATA is not.
            try Self.answer(.txt([[UInt8]](repeating: [UInt8](repeating: 1, count: 255), count: 257))).serialized()
        }
        #expect(throws: DNSWireError(.valueOutOfRange, "")) {
            try DNSMessage(edns: EDNS(options: [EDNSOption(code: 1, data: [UInt8](repeating: 0, count: 65536))])).serialized()
        }
        #expect(throws: DNSWireError(.valueOutOfRange, "")) {
            try DNSMessage(header: DNSHeader(rcode: .badVers)).serialized()
        }
        #expect(throws: DNSWireError(.valueOutOfRange, "")) {
            try DNSMessage(header: DNSHeader(opcode: DNSOpcode(rawValue: 16))).serialized()
        }
        #expect(throws: DNSWireError(.valueOutOfRange, "")) {
            try DNSMessage(additionals: [DNSResourceRecord(name: .root, ttl: 0, rdata: .opt([]))]).serialized()
        }
        #expect(throws: DNSWireError(.valueOutOfRange, "")) {
            try DNSMessage(answers: [DNSResourceRecord(name: .root, type: .txt, rawClass: 1, ttl: 0, rdata: .a([1, 2, 3, 4]))]).serialized()
        }
    }

    @Test func refusesMoreThan65535Entries() {
        let question = DNSQuestion(name: .root, type: .a)
        #expect(throws: DNSWireError(.recordCountTooLarge, "")) {
            try DNSMessage(questions: [DNSQuestion](repeating: question, count: 65536)).serialized()
        }
        // 65535 additionals plus the OPT record is one too many.
        let record = DNSResourceRecord(name: .root, ttl: 0, rdata: .null([]))
        #expect(throws: DNSWireError(.recordCountTooLarge, "")) {
            try DNSMessage(additionals: [DNSResourceRecord](repeating: record, count: 65535), edns: EDNS()).serialized()
        }
    }

    @Test func failedSerializeLeavesTheBufferAlone() {
        var buffer: [UInt8] = [9, 9, 9]
        #expect(throws: DNSWireError(.rdataLengthMismatch, "")) {
            try Self.answer(.a([1])).serialize(into: &buffer)
        }
        #expect(buffer == [9, 9, 9])
    }

    @Test func compressionShrinksRepeatedSuffixes() throws {
        let domain = Fixtures.name("t.tunnel-domain.example")
        var message = DNSMessage(
            header: DNSHeader(id: 3, isResponse: true),
            questions: [DNSQuestion(name: try DNSName("abcdef").appending(domain), type: .txt)]
        )
        for index in 0..<10 {
            message.answers.append(DNSResourceRecord(name: try DNSName("abcdef").appending(domain), ttl: 1, rdata: .txt([[UInt8(index)]])))
            message.answers.append(DNSResourceRecord(name: domain, ttl: 1, rdata: .cname(try DNSName("n\(index)").appending(domain))))
        }
        let compressed = try message.serialized()
        let plain = try message.serialized(compress: false)
        #expect(compressed.count < plain.count / 2)
        #expect(try DNSMessage(parsing: compressed) == message)
        #expect(try DNSMessage(parsing: plain) == message)
    }

    @Test func compressionNeedsExactCase() throws {
        let message = DNSMessage(
            questions: [DNSQuestion(name: Fixtures.name("a.Example.com"), type: .a)],
            answers: [DNSResourceRecord(name: Fixtures.name("a.example.com"), ttl: 0, rdata: .a([1, 1, 1, 1]))]
        )
        let bytes = try message.serialized()
        let parsed = try DNSMessage(parsing: bytes)
        #expect(parsed == message)
        #expect(parsed.answers[0].name.description == "a.example.com")
        // Question: 1a 7Example 3com 0 = 15 octets; answer owner: 1a 7example + pointer to "com" = 12.
        #expect(bytes.count == 12 + 15 + 4 + 12 + 10 + 4)
    }

    @Test func srvTargetIsNeverCompressed() throws {
        let host = Fixtures.name("host.example.com")
        let message = DNSMessage(
            questions: [DNSQuestion(name: host, type: .srv)],
            answers: [DNSResourceRecord(name: host, ttl: 0, rdata: .srv(priority: 0, weight: 0, port: 53, target: host))]
        )
        let bytes = try message.serialized()
        // Question 18 + 4, answer owner as a pointer (2) + 10, SRV RDATA 6 + 18 uncompressed.
        #expect(bytes.count == 12 + 22 + 12 + 24)
        #expect(Array(bytes.suffix(18)) == [4] + Array("host".utf8) + [7] + Array("example".utf8) + [3] + Array("com".utf8) + [0])
        #expect(try DNSMessage(parsing: bytes) == message)
    }

    @Test func unknownTypesAreNeverCompressed() throws {
        let message = Fixtures.everyType
        let bytes = try message.serialized()
        #expect(try DNSMessage(parsing: bytes) == message)
        // The private-type record carries its 3 raw bytes untouched.
        #expect(bytes.firstRange(of: [0xFF, 0x77, 0, 1, 0, 0, 0, 7, 0, 3, 9, 8, 7] as [UInt8]) != nil)
    }

    @Test func manyDistinctSuffixesStillFindEveryMatch() throws {
        // 300 distinct owners outgrow the linear table; writing them all again must cost one
        // pointer each, and a case variant may only share the "zone.example" suffix.
        let zone = Fixtures.name("zone.example")
        let owners = try (0..<300).map { index in try DNSName("h\(index)").appending(zone) }
        func message(_ names: [DNSName]) -> DNSMessage {
            DNSMessage(answers: names.map { DNSResourceRecord(name: $0, ttl: 0, rdata: .a([1, 2, 3, 4])) })
        }
        let once = try message(owners).serialized()
        let twice = try message(owners + owners).serialized()
        #expect(twice.count - once.count == 300 * (2 + 10 + 4))
        #expect(try DNSMessage(parsing: twice) == message(owners + owners))

        let upper = try (0..<300).map { index in try DNSName("H\(index)").appending(zone) }
        let mixed = try message(owners + upper).serialized()
        let upperLabels = upper.reduce(0) { $0 + $1.wireLength - zone.wireLength }
        #expect(mixed.count - once.count == upperLabels + 300 * (2 + 10 + 4))
        #expect(try DNSMessage(parsing: mixed) == message(owners + upper))
    }

    @Test func namesPastThePointerRangeStillRoundTrip() throws {
        // 20 NULL records of 1000 bytes push later names past offset 0x3FFF, where they can no
        // longer be pointer targets but can still point back.
        var message = DNSMessage()
        for index in 0..<40 {
            let name = try DNSName("r\(index % 5)").appending(Fixtures.name("late.example"))
            message.answers.append(DNSResourceRecord(name: name, ttl: 0, rdata: .null([UInt8](repeating: UInt8(index), count: 1000))))
        }
        let bytes = try message.serialized()
        #expect(bytes.count > 0x4000)
        #expect(try DNSMessage(parsing: bytes) == message)
    }
}
