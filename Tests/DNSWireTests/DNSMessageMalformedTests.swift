import DNSWire
import Testing

/// Hand-built hostile inputs, each expecting one specific error code (and where it is telling,
/// the offset).
@Suite("DNSMessage malformed input")
struct DNSMessageMalformedTests {
    typealias Code = DNSWireError.Code

    static let ttl: [UInt8] = [0, 0, 0, 60]
    static let optRecord: [UInt8] = [0, 0, 41, 0x10, 0x00, 0, 0, 0, 0, 0, 0]

    func expectError(_ bytes: [UInt8], _ code: Code, at offset: Int? = nil, sourceLocation: SourceLocation = #_sourceLocation) {
        do throws(DNSWireError) {
            let message = try DNSMessage(parsing: bytes)
            Issue.record("expected \(code), parsed \(message)", sourceLocation: sourceLocation)
        } catch {
            #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
            if let offset {
                #expect(error.offset == offset, "\(error)", sourceLocation: sourceLocation)
            }
        }
    }

    @Test func truncatedHeader() {
        expectError([], .truncated, at: 0)
        expectError([0, 1, 2], .truncated, at: 3)
        expectError([UInt8](repeating: 0, count: 11), .truncated, at: 11)
        #expect(throws: Never.self) { try DNSMessage(parsing: [UInt8](repeating: 0, count: 12)) }
    }

    @Test func selfPointer() {
        expectError(Fixtures.header(qd: 1) + [0xC0, 12] + Fixtures.typeAClassIN, .pointerLoop, at: 12)
    }

    @Test func pointersPointingAtEachOther() {
        // 12 -> 14 and 14 -> 12: the first hop is already forward.
        expectError(Fixtures.header(qd: 1) + [0xC0, 14, 0xC0, 12] + Fixtures.typeAClassIN, .pointerLoop, at: 12)
        // Second question: 17 -> 19 -> 17.
        expectError(
            Fixtures.header(qd: 2) + [0] + Fixtures.typeAClassIN + [0xC0, 19, 0xC0, 17] + Fixtures.typeAClassIN,
            .pointerLoop, at: 17
        )
    }

    @Test func labelThenPointerBackToItself() {
        // "a" then a pointer to the start of the same name: backwards, but still a cycle.
        expectError(Fixtures.header(qd: 1) + [1, 0x61, 0xC0, 12] + Fixtures.typeAClassIN, .pointerLoop, at: 14)
    }

    @Test func forwardPointer() {
        // 12 -> 18, where a valid name does sit; forward pointers are refused anyway.
        expectError(Fixtures.header(qd: 1) + [0xC0, 18] + Fixtures.typeAClassIN + Fixtures.exampleCom, .pointerLoop, at: 12)
    }

    @Test func pointerOutOfBounds() {
        expectError(Fixtures.header(qd: 1) + [0xFF, 0xFF] + Fixtures.typeAClassIN, .pointerOutOfBounds, at: 12)
        expectError(Fixtures.header(qd: 1) + [0xC0, 18] + Fixtures.typeAClassIN, .pointerOutOfBounds, at: 12)
    }

    @Test func pointerCutShort() {
        // Two labels, then the first byte of a pointer and nothing after it.
        expectError(Fixtures.header(qd: 1) + [1, 0x61, 1, 0x62, 0xC0], .truncated, at: 16)
        expectError(Fixtures.header(qd: 2) + [0] + Fixtures.typeAClassIN + [1, 0x61, 1, 0x62, 0xC0], .truncated, at: 21)
    }

    @Test(arguments: [UInt8(0x40), 0x41, 0x80, 0xBF])
    func reservedLabelTypes(byte: UInt8) {
        expectError(Fixtures.header(qd: 1) + [byte, 0x61, 0x61, 0] + Fixtures.typeAClassIN, .badLabelType, at: 12)
    }

    @Test func nameLongerThan255() {
        let label: [UInt8] = [60] + [UInt8](repeating: 0x61, count: 60)
        expectError(Fixtures.header(qd: 1) + Array([[UInt8]](repeating: label, count: 5).joined()) + [0] + Fixtures.typeAClassIN, .nameTooLong)
        // 205 octets at offset 12, then a 51-octet label plus a pointer to it: 256 decompressed.
        let fifty: [UInt8] = [50] + [UInt8](repeating: 0x62, count: 50)
        let first = Array([[UInt8]](repeating: fifty, count: 4).joined()) + [0]
        expectError(Fixtures.header(qd: 2) + first + Fixtures.typeAClassIN + fifty + [0xC0, 12] + Fixtures.typeAClassIN, .nameTooLong)
    }

    @Test func truncatedQuestion() {
        expectError(Fixtures.header(qd: 1) + [7] + Array("exam".utf8), .truncated)
        expectError(Fixtures.header(qd: 1) + Fixtures.exampleCom + [0], .truncated)
    }

    @Test func truncatedRecord() {
        expectError(Fixtures.header(an: 1) + Fixtures.exampleCom + Fixtures.typeAClassIN + [0, 0], .truncated)
        expectError(Fixtures.header(an: 1) + [0] + Fixtures.typeAClassIN + Self.ttl + [0], .truncated)
    }

    @Test func rdlengthOverrunsTheMessage() {
        expectError(Fixtures.header(an: 1) + [0] + Fixtures.typeAClassIN + Self.ttl + [0, 100] + [1, 2, 3, 4], .truncated, at: 23)
    }

    @Test func aRecordWithFiveBytes() {
        expectError(Fixtures.header(an: 1) + [0] + Fixtures.typeAClassIN + Self.ttl + [0, 5] + [1, 2, 3, 4, 5], .rdataLengthMismatch)
        expectError(Fixtures.header(an: 1) + [0] + [0, 28, 0, 1] + Self.ttl + [0, 4] + [1, 2, 3, 4], .rdataLengthMismatch)
    }

    @Test func nameInsideRDataRunsPastRDLENGTH() {
        // MX: preference, then a name that needs 13 octets but RDLENGTH leaves 2. The message
        // itself is long enough, so this must be a length mismatch, not truncation.
        expectError(Fixtures.header(an: 1) + [0] + [0, 15, 0, 1] + Self.ttl + [0, 4] + [0, 10] + Fixtures.exampleCom,
                    .rdataLengthMismatch)
    }

    @Test func rdataLongerThanItsContent() {
        expectError(Fixtures.header(an: 1) + [0] + [0, 5, 0, 1] + Self.ttl + [0, 14] + Fixtures.exampleCom + [0xFF],
                    .rdataLengthMismatch)
        // SOA missing its last field.
        let soa: [UInt8] = [0, 0] + [UInt8](repeating: 0, count: 16)
        expectError(Fixtures.header(an: 1) + [0] + [0, 6, 0, 1] + Self.ttl + [0, 18] + soa, .rdataLengthMismatch)
    }

    @Test func txtStringPastRDLENGTH() {
        expectError(Fixtures.header(an: 1) + [0] + [0, 16, 0, 1] + Self.ttl + [0, 3] + [5, 0x61, 0x62] + [0x63, 0x64, 0x65],
                    .rdataLengthMismatch)
    }

    @Test func hugeCountsWithATinyBody() {
        let start = ContinuousClock.now
        expectError(Fixtures.header(qd: 0xFFFF, an: 0xFFFF, ns: 0xFFFF, ar: 0xFFFF) + [0, 0, 0, 0, 0], .truncated, at: 12)
        expectError(Fixtures.header(ar: 0xFFFF) + Self.optRecord, .truncated, at: 12)
        #expect(ContinuousClock.now - start < .seconds(1))
    }

    @Test func secondOPTRecord() {
        expectError(Fixtures.header(ar: 2) + Self.optRecord + Self.optRecord, .valueOutOfRange, at: 23)
    }

    @Test func optOwnerMustBeRoot() {
        expectError(Fixtures.header(ar: 1) + [1, 0x61] + Self.optRecord, .valueOutOfRange, at: 12)
    }

    @Test func optOutsideTheAdditionalSection() {
        expectError(Fixtures.header(an: 1) + Self.optRecord, .valueOutOfRange)
        expectError(Fixtures.header(ns: 1) + Self.optRecord, .valueOutOfRange)
    }

    @Test func optOptionPastRDLENGTH() {
        let opt: [UInt8] = [0, 0, 41, 0x10, 0x00, 0, 0, 0, 0, 0, 6] + [0, 10, 0, 8, 1, 2]
        expectError(Fixtures.header(ar: 1) + opt + [3, 4, 5, 6, 7, 8], .rdataLengthMismatch)
    }

    @Test func compressedNamesInRDataAreAccepted() throws {
        // CNAME pointing back at the question name: pointers inside RDATA may leave the RDATA.
        let bytes = Fixtures.header(qd: 1, an: 1) + Fixtures.exampleCom + Fixtures.typeAClassIN
            + [0xC0, 12] + [0, 5, 0, 1] + Self.ttl + [0, 5] + [2, 0x77, 0x77, 0xC0, 12]
        let message = try DNSMessage(parsing: bytes)
        #expect(message.answers.first?.rdata == .cname(Fixtures.name("ww.example.com")))
        #expect(message.answers.first?.name == Fixtures.name("example.com"))
    }
}

/// A question name past 255 octets: no DNS name (`nameTooLong`), but its labels still read.
@Suite("DNSMessage question names past the limit")
struct DNSMessageOverlongNameTests {
    /// A query header (one question) and a name of `labels` ending in `m.lab.test`, then TXT IN.
    static func query(_ labels: [[UInt8]]) -> [UInt8] {
        var bytes: [UInt8] = [0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]
        for label in labels + [Array("m".utf8), Array("LAB".utf8), Array("test".utf8)] { bytes += [UInt8(label.count)] + label }
        return bytes + [0, 0, 16, 0, 1]
    }

    @Test func aNamePastTheLimitIsRead() throws {
        let long = (0..<5).map { index in [UInt8](repeating: UInt8(ascii: "a") + UInt8(index), count: 59) }
        let bytes = Self.query(long)
        #expect(throws: DNSWireError.self) { try DNSMessage(parsing: bytes) }
        let name = try #require(DNSMessage.firstQuestionName(ignoringLengthLimit: bytes))
        #expect(name.utf8.count + 2 == 5 * 60 + 12 && name.hasSuffix(".m.lab.test") && name.hasPrefix("aaaa"))
        // Within the limit it is the parser's own name.
        let short = Self.query([Array("Abc".utf8)])
        #expect(DNSMessage.firstQuestionName(ignoringLengthLimit: short) == "abc.m.lab.test")
        let parsed = try #require(try DNSMessage(parsing: short).questions.first?.name.description.lowercased())
        #expect(parsed == "abc.m.lab.test" || parsed == "abc.m.lab.test.", "\(parsed)")
    }

    @Test func whatIsNoPlainNameIsNil() {
        let good = Self.query([Array("x".utf8)])
        #expect(DNSMessage.firstQuestionName(ignoringLengthLimit: Array(good.prefix(20))) == nil, "truncated")
        var pointer = good
        pointer[12] = 0xC0
        #expect(DNSMessage.firstQuestionName(ignoringLengthLimit: pointer) == nil, "a pointer")
        #expect(DNSMessage.firstQuestionName(ignoringLengthLimit: Self.query([[UInt8](repeating: 0x61, count: 64)])) == nil, "a 64-octet label")
        var none = good
        none[5] = 0
        #expect(DNSMessage.firstQuestionName(ignoringLengthLimit: none) == nil, "no question")
        #expect(DNSMessage.firstQuestionName(ignoringLengthLimit: []) == nil)
        // 70 labels of 63: past the 4096 octets it reads.
        #expect(DNSMessage.firstQuestionName(ignoringLengthLimit: Self.query(Array(repeating: [UInt8](repeating: 0x62, count: 63), count: 70))) == nil)
    }
}
