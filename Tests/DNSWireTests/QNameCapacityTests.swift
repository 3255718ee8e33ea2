import DNSWire
import Testing

@Suite("QNameCapacity")
struct QNameCapacityTests {
    /// 12 characters: v-p-n . a-b-c-d . x-y-z.
    static let domain = Fixtures.name("vpn.abcd.xyz")

    @Test func masterDnsVPNWorkedValues() throws {
        #expect(Self.domain.textLength == 12)
        #expect(QNameCapacity.payloadCharacters(under: Self.domain) == 237)
        #expect(QNameCapacity.qnameCharacters(payloadCharacters: 237, under: Self.domain) == 253)
        #expect(QNameCapacity.maxPayloadBytes(under: Self.domain, encoding: .base36) == 153)
        // MasterDnsVPN's frame header is 14 bytes; ChaCha20 adds 16, AES-GCM 28.
        #expect(QNameCapacity.maxPayloadBytes(under: Self.domain, encoding: .base36, frameOverhead: 14) == 139)
        #expect(QNameCapacity.maxPayloadBytes(under: Self.domain, encoding: .base36, frameOverhead: 30) == 123)
        #expect(QNameCapacity.maxPayloadBytes(under: Self.domain, encoding: .base36, frameOverhead: 42) == 111)
        #expect(QNameCapacity.maxPayloadBytes(under: Self.domain, encoding: .base32) == 148)
    }

    @Test func theWorkedQueryIsALegalName() throws {
        let payload = [UInt8](repeating: 0xFF, count: 153)
        let chars = LabelEncoding.base36.encode(payload)
        #expect(chars.count == 237)
        let labels = QNameCapacity.labels(splitting: chars)
        #expect(labels.map(\.count) == [63, 63, 63, 48])
        let name = try DNSName(labels: labels).appending(Self.domain)
        #expect(name.textLength == 253)
        #expect(name.wireLength == 255)
        // One more character does not fit.
        let tooMany = QNameCapacity.labels(splitting: chars + [UInt8(ascii: "0")])
        #expect(throws: DNSWireError(.nameTooLong, "")) { try DNSName(labels: tooMany).appending(Self.domain) }
    }

    @Test func domainsTooLongForAnything() throws {
        let full = Fixtures.name([63, 63, 63, 61].map { String(repeating: "d", count: $0) }.joined(separator: "."))
        #expect(full.wireLength == 255)
        #expect(QNameCapacity.payloadCharacters(under: full) == 0)
        let almost = Fixtures.name([63, 63, 63, 60].map { String(repeating: "d", count: $0) }.joined(separator: "."))
        #expect(QNameCapacity.payloadCharacters(under: almost) == 0)  // one octet left: no room for a label
        #expect(QNameCapacity.maxPayloadBytes(under: full, encoding: .base32, frameOverhead: 14) == 0)
        let twoLeft = Fixtures.name([63, 63, 63, 59].map { String(repeating: "d", count: $0) }.joined(separator: "."))
        #expect(QNameCapacity.payloadCharacters(under: twoLeft) == 1)
    }

    @Test func domainsOf63CharacterLabels() {
        let three = Fixtures.name([String](repeating: String(repeating: "L", count: 63), count: 3).joined(separator: "."))
        #expect(three.textLength == 191)
        // 253 - 191 = 62 characters including the dot: one label of 61.
        #expect(QNameCapacity.payloadCharacters(under: three) == 61)
        #expect(QNameCapacity.qnameCharacters(payloadCharacters: 61, under: three) == 253)
        let one = Fixtures.name(String(repeating: "L", count: 63))
        // 253 - 63 = 190 = 2 x 64 + 62: 63 + 63 + 61.
        #expect(QNameCapacity.payloadCharacters(under: one) == 187)
        #expect(QNameCapacity.qnameCharacters(payloadCharacters: 187, under: one) == 253)
    }

    @Test func exactlyOneFullLabelLeft() {
        func domain(textLength: Int) -> DNSName {
            // Labels of 63, 63 and whatever is left, joined by two dots.
            Fixtures.name([String(repeating: "e", count: 63), String(repeating: "e", count: 63),
                           String(repeating: "e", count: textLength - 128)].joined(separator: "."))
        }
        // 64 characters left: exactly one 63-character label and its dot.
        #expect(domain(textLength: 189).textLength == 189)
        #expect(QNameCapacity.payloadCharacters(under: domain(textLength: 189)) == 63)
        #expect(QNameCapacity.qnameCharacters(payloadCharacters: 63, under: domain(textLength: 189)) == 253)
        // 65 left: a 64th character would need a second label and a second dot.
        #expect(QNameCapacity.payloadCharacters(under: domain(textLength: 188)) == 63)
        // 63 left: the label shrinks to 62.
        #expect(QNameCapacity.payloadCharacters(under: domain(textLength: 190)) == 62)
    }

    @Test func rootDomain() {
        // 253 characters: 63 + 63 + 63 + 61 and three dots.
        #expect(QNameCapacity.payloadCharacters(under: .root) == 250)
        #expect(QNameCapacity.qnameCharacters(payloadCharacters: 250, under: .root) == 253)
        #expect(QNameCapacity.qnameCharacters(payloadCharacters: 0, under: .root) == 0)
    }

    @Test func everyDomainLengthFillsButNeverOverflows() throws {
        // For each domain text length the computed payload builds a name of at most 255 octets,
        // and one more character always breaks a limit.
        for textLength in 1...253 {
            var parts: [String] = []
            var remaining = textLength
            while remaining > 0 {
                // Leave at least one character for the next label after a dot.
                let take = remaining <= 63 ? remaining : min(63, remaining - 2)
                parts.append(String(repeating: "q", count: take))
                remaining -= take + 1
            }
            let domain = Fixtures.name(parts.joined(separator: "."))
            try #require(domain.textLength == textLength)
            let capacity = QNameCapacity.payloadCharacters(under: domain)
            let chars = [UInt8](repeating: UInt8(ascii: "a"), count: capacity)
            let name = try DNSName(labels: QNameCapacity.labels(splitting: chars)).appending(domain)
            #expect(name.textLength == QNameCapacity.qnameCharacters(payloadCharacters: capacity, under: domain))
            #expect(name.textLength <= QNameCapacity.maxNameCharacters)
            let oneMore = QNameCapacity.labels(splitting: chars + [UInt8(ascii: "a")])
            #expect((try? DNSName(labels: oneMore).appending(domain)) == nil, "\(textLength)")
        }
    }

    @Test func splitting() {
        #expect(QNameCapacity.labels(splitting: []).isEmpty)
        #expect(QNameCapacity.labels(splitting: [UInt8](repeating: 1, count: 63)).map(\.count) == [63])
        #expect(QNameCapacity.labels(splitting: [UInt8](repeating: 1, count: 64)).map(\.count) == [63, 1])
        #expect(QNameCapacity.maxPayloadBytes(under: Self.domain, encoding: .base36, frameOverhead: 10_000) == 0)
    }
}
