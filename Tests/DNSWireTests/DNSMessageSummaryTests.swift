import DNSWire
import Testing

@Suite("DNSMessage.summary")
struct DNSMessageSummaryTests {
    @Test func queryWithEDNS() throws {
        let bytes = try Fixtures.tunnelQuery.serialized()
        let summary = try DNSMessage.summary(parsing: bytes)
        #expect(summary.header == Fixtures.tunnelQuery.header)
        #expect(summary.question == Fixtures.tunnelQuery.questions.first)
        #expect(summary.answerCount == 0)
        #expect(summary.udpPayloadSize == 4096)
        #expect(summary.messageLength == bytes.count)
        let viaRaw = try bytes.withUnsafeBytes { raw in try DNSMessage.summary(parsing: raw) }
        #expect(viaRaw == summary)
    }

    @Test func responseSkipsThePayloadSize() throws {
        let summary = try DNSMessage.summary(parsing: Fixtures.everyType.serialized())
        #expect(summary.answerCount == Fixtures.everyType.answers.count)
        #expect(summary.question?.name == Fixtures.name("www.Example.COM"))
        #expect(summary.udpPayloadSize == nil)
    }

    @Test func withoutQuestionOrEDNS() throws {
        let summary = try DNSMessage.summary(parsing: DNSMessage(header: DNSHeader(id: 5)).serialized())
        #expect(summary.question == nil)
        #expect(summary.udpPayloadSize == nil)
        #expect(summary.header.id == 5)
    }

    @Test func malformedInputThrows() {
        #expect(throws: DNSWireError(.truncated, "")) { try DNSMessage.summary(parsing: [0, 1]) }
        #expect(throws: DNSWireError(.pointerLoop, "")) {
            try DNSMessage.summary(parsing: Fixtures.header(qd: 1) + [0xC0, 12, 0, 1, 0, 1])
        }
    }
}
