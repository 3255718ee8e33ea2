import DNSWire
import ProbeProtocol
import Testing

let testKey = try! ProbeKey(bytes: Array(0..<32))
let otherKey = try! ProbeKey(bytes: Array(100..<132))
let zone = try! DNSName("vpn.lab.test")
let nonce: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]

@Suite struct ProbeNameTests {
    @Test func metaRoundTripsAndBindsKeyAndZone() throws {
        let meta = ProbeMeta.download(nonce: nonce, bytes: 1200, type: .txt, encoding: .base64url, totalCharacters: 100)
        let chars = meta.sealed(zone: zone, key: testKey)
        #expect(chars.count == ProbeMeta.characterCount)
        let opened = try ProbeMeta.open(chars[...], zone: zone, key: testKey)
        #expect(opened == meta)
        #expect(opened.requestedBytes == 1200 && opened.requestedType == .txt)
        #expect(throws: ProbeError(.badTag, "")) { try ProbeMeta.open(chars[...], zone: zone, key: otherKey) }
        #expect(throws: ProbeError(.badTag, "")) { try ProbeMeta.open(chars[...], zone: try DNSName("other.test"), key: testKey) }
        var tampered = chars
        tampered[20] = tampered[20] == UInt8(ascii: "a") ? UInt8(ascii: "b") : UInt8(ascii: "a")
        #expect(throws: ProbeError(.badTag, "")) { try ProbeMeta.open(tampered[...], zone: zone, key: testKey) }
    }

    @Test(arguments: LabelEncoding.allCases)
    func fullSizeNameIsIntactAndFillsTheName(encoding: LabelEncoding) throws {
        let capacity = QNameCapacity.payloadCharacters(under: zone)
        #expect(capacity == 237)
        let meta = ProbeMeta(kind: .upload, encoding: encoding, nonce: nonce, totalCharacters: capacity)
        let name = try ProbeName.build(meta: meta, zone: zone, key: testKey)
        #expect(name.wireLength == 255)  // 253 characters of text; base128 bytes would print escaped
        #expect(name.labels.dropLast(3).allSatisfy { $0.count <= 63 })
        let received = try ProbeName.read(name, zone: zone, key: testKey)
        #expect(received.integrity == .intact)
        #expect(received.meta == meta)
    }

    @Test func detectsCaseChangeRewriteAndTruncation() throws {
        let meta = ProbeMeta(kind: .upload, encoding: .base32, nonce: nonce, totalCharacters: 150)
        let name = try ProbeName.build(meta: meta, zone: zone, key: testKey)
        var labels = name.labels

        var upper = labels
        upper[1] = upper[1].map { $0 >= 97 && $0 <= 122 ? $0 - 32 : $0 }
        #expect(try ProbeName.read(DNSName(labels: upper), zone: zone, key: testKey).integrity == .caseChanged)

        var rewritten = labels
        rewritten[1][5] = rewritten[1][5] == UInt8(ascii: "2") ? UInt8(ascii: "3") : UInt8(ascii: "2")
        #expect(try ProbeName.read(DNSName(labels: rewritten), zone: zone, key: testKey).integrity == .rewritten)

        labels[2].removeLast()
        #expect(try ProbeName.read(DNSName(labels: labels), zone: zone, key: testKey).integrity == .lengthMismatch)
    }

    @Test func refusesWhatIsNotAProbe() throws {
        #expect(throws: ProbeError(.notAProbe, "")) { try ProbeName.read(DNSName("www.vpn.lab.test"), zone: zone, key: testKey) }
        #expect(throws: ProbeError(.notAProbe, "")) { try ProbeName.read(DNSName("vpn.lab.test"), zone: zone, key: testKey) }
        let tooLong = ProbeMeta(kind: .upload, nonce: nonce, totalCharacters: 238)
        #expect(throws: ProbeError(.outOfRange, "")) { try ProbeName.build(meta: tooLong, zone: zone, key: testKey) }
    }

    @Test func replyAuthenticatesAgainstItsNonce() throws {
        let reply = ProbeReply(kind: .upload, integrity: .intact, receivedCharacters: 237, digest: Array(repeating: 7, count: 8))
        let bytes = reply.sealed(nonce: nonce, key: testKey)
        #expect(bytes.count == ProbeReply.byteCount)
        #expect(try ProbeReply.open(bytes, nonce: nonce, key: testKey) == reply)
        #expect(throws: ProbeError(.badTag, "")) { try ProbeReply.open(bytes, nonce: [9, 9, 9, 9, 9, 9, 9, 9], key: testKey) }
        #expect(throws: ProbeError(.malformedReply, "")) { try ProbeReply.open(Array(bytes.dropLast()), nonce: nonce, key: testKey) }
    }
}

@Suite struct DownloadLayoutTests {
    @Test(arguments: DownloadLayout.supportedTypes)
    func everyTypeRoundTripsThroughTheWire(type: DNSType) throws {
        let owner = try DNSName("abc.vpn.lab.test")
        let max = min(DownloadLayout.maxPayload(type: type, zone: zone), 3000)
        for size in Set([1, 3, 20, 255, 256, 511, max]) where size <= max {
            let payload = DownloadLayout.payload(key: testKey, nonce: nonce, count: size)
            let records = try DownloadLayout.records(payload: payload, type: type, owner: owner, zone: zone)
            // Through a real encode/decode, with the RRset reversed as a shuffling resolver might.
            let message = DNSMessage(header: DNSHeader(id: 1), questions: [DNSQuestion(name: owner, type: type)],
                                     answers: records.reversed())
            let parsed = try DNSMessage(parsing: message.serialized())
            let back = try DownloadLayout.extract(answers: parsed.answers, type: type, owner: owner, zone: zone, expected: size)
            #expect(back == payload, "\(type) \(size)")
        }
    }

    @Test func refusesPayloadsThatDoNotFit() {
        let payload = [UInt8](repeating: 1, count: 766)
        #expect(throws: ProbeError(.outOfRange, "")) {
            try DownloadLayout.records(payload: payload, type: .a, owner: zone, zone: zone)
        }
    }

    @Test func keyFileParsing() throws {
        #expect(throws: ProbeKeyError.self) { try ProbeKey(hexText: "abcd") }
        #expect(throws: ProbeKeyError.self) { try ProbeKey(hexText: String(repeating: "zz", count: 16)) }
        _ = try ProbeKey(hexText: String(repeating: "0a", count: 16) + "\n")
        #expect(throws: ProbeKeyError.self) { try ProbeKey.load(path: "/nonexistent/probe.key") }
    }
}
