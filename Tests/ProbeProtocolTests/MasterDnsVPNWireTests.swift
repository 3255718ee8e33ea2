import Base
import DNSWire
import Foundation
import ProbeProtocol
import Testing

// MasterDnsVPN's own MTU-test wire (Go edition, commit bc69a58): base 36, the six encryption
// methods, frames. The cipher vectors were made with Python's `cryptography` 48.0.0 (ChaCha20 with
// a 16-byte nonce whose first 4 bytes are the little-endian counter; AESGCM), an implementation
// independent of this one; the real server's bytes are tested in ProbeClientTests
// (MasterDnsVPNRecordedExchangeTests).
@Suite struct MasterDnsVPNWireTests {
    static let key = "0123456789abcdef0123456789abcdef"

    @Test func lowerBase36MatchesTheEnginesBlocks() throws {
        #expect(LowerBase36.encode([UInt8](repeating: 0xff, count: 7)) == Array("jpia9pm8jr3".utf8))
        #expect(LowerBase36.encode([UInt8](repeating: 0xff, count: 6)) == Array("2rrvthnxtr".utf8))
        #expect(LowerBase36.encode([1]) == Array("01".utf8))
        #expect(LowerBase36.encode(Array(1...15)) == Array("02sk3zitmo70m9pwciay320f".utf8))
        for n in 0...40 {
            let bytes = (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            let text = LowerBase36.encode(bytes)
            #expect(text.count == LowerBase36.encodedLength(n))
            #expect(try LowerBase36.decode(text) == bytes)
            // Resolvers may change letter case (0x20 randomisation): decoding takes either.
            #expect(try LowerBase36.decode(Array(String(decoding: text, as: UTF8.self).uppercased().utf8)) == bytes)
        }
    }

    @Test func lowerBase36RejectsWhatNoByteCountMakes() {
        #expect(throws: LowerBase36.DecodeError.badLength(1)) { try LowerBase36.decode(Array("0".utf8)) }
        #expect(throws: LowerBase36.DecodeError.badLength(3)) { try LowerBase36.decode(Array("jpia9pm8jr3abc".utf8)) }
        #expect(throws: LowerBase36.DecodeError.badCharacter(offset: 4)) { try LowerBase36.decode(Array("0123-".utf8)) }
        // "zz" is 1295, more than one byte holds.
        #expect(throws: LowerBase36.DecodeError.overflow(offset: 0)) { try LowerBase36.decode(Array("zz".utf8)) }
    }

    @Test func ciphersMatchAnIndependentImplementation() throws {
        let plain = [UInt8](0..<40)
        let chacha = try MasterDnsVPNCipher(method: 2, keyText: Self.key)
        let nonce16: [UInt8] = [5, 0, 0, 0] + Array(100..<112)
        #expect(hex(chacha.seal(plain, nonce: nonce16)) ==
            "050000006465666768696a6b6c6d6e6ff828e52917c298ef9b218bf54f0d3d90540a327bf6fa6601b0e1f73d03cc3619d96ce28736d39507")
        let vectors = [
            3: "c8c9cacbcccdcecfd0d1d2d33cbf4fefa384bbdbb83adc4c92d8315afc61bf602c23e0141b2c3af3790d78764f6f14eb1a44a061c13c1712ec3e300307b24f8d9fc63ab8",
            4: "c8c9cacbcccdcecfd0d1d2d3b2b51da9ab69c9bc95ba49477f9bc6835cd759caf98a97bfe6013d4ea026ce2d8ae5cf478ad70c6761bd0c3f147e70d0063f4964acdbc855",
            5: "c8c9cacbcccdcecfd0d1d2d3bd6922625a2515ff13b80c06074f736d6b035dd7c8a9096c7e1c0286b6ed18718088b4615d63456489f20649c38b8cd19648df60e7ae16fb",
        ]
        for (method, expected) in vectors {
            let aes = try MasterDnsVPNCipher(method: method, keyText: Self.key + "\n")
            #expect(hex(aes.seal(plain, nonce: Array(200..<212))) == expected, "method \(method)")
        }
        // XOR: the key text itself, repeated from the frame's first byte.
        let xor = try MasterDnsVPNCipher(method: 1, keyText: Self.key)
        #expect(xor.seal([UInt8](repeating: 0, count: 40)) == Array((Self.key + Self.key.prefix(8)).utf8))
    }

    @Test(arguments: 0...5)
    func everyMethodOpensWhatItSeals(method: Int) throws {
        let cipher = try MasterDnsVPNCipher(method: method, keyText: Self.key)
        let plain = [UInt8](repeating: 7, count: 100)
        let sealed = cipher.seal(plain)
        #expect(sealed.count == plain.count + cipher.overhead)
        #expect(try cipher.open(sealed) == plain)
        if method >= 3 {
            var altered = sealed
            altered[20] ^= 1
            #expect(throws: MasterDnsVPNCipher.Failure.authenticationFailed) { try cipher.open(altered) }
            let other = try MasterDnsVPNCipher(method: method, keyText: "another key")
            #expect(throws: MasterDnsVPNCipher.Failure.authenticationFailed) { try other.open(sealed) }
        }
    }

    @Test func badKeysAndMethodsAreTypedErrors() {
        #expect(throws: MasterDnsVPNCipher.Failure.emptyKey) { try MasterDnsVPNCipher(method: 5, keyText: " \n") }
        #expect(throws: MasterDnsVPNCipher.Failure.unknownMethod(6)) { try MasterDnsVPNCipher(method: 6, keyText: "k") }
        #expect(throws: MasterDnsVPNCipher.Failure.tooShort(20)) {
            try MasterDnsVPNCipher(method: 5, keyText: "k").open([UInt8](repeating: 0, count: 20))
        }
    }

    @Test func framesRoundTripAndTheirCheckByteIsChecked() throws {
        var frame = MasterDnsVPNFrame(sessionID: 255, type: .mtuUpRequest, payload: [0, 1, 2, 3, 4, 9, 9])
        frame.streamID = 1
        frame.sequence = 1
        frame.fragmentCount = 1
        #expect(frame.bytes.count == 11 + 7)
        #expect(try MasterDnsVPNFrame(parsing: frame.bytes) == frame)
        var broken = frame.bytes
        broken[10] ^= 0x40
        #expect(throws: MasterDnsVPNFrame.ParseError.badCheckByte) { try MasterDnsVPNFrame(parsing: broken) }
        #expect(throws: MasterDnsVPNFrame.ParseError.unexpectedType(0x0F)) { try MasterDnsVPNFrame(parsing: [1, 0x0F, 0, 0, 0]) }
        #expect(throws: MasterDnsVPNFrame.ParseError.tooShort(3)) { try MasterDnsVPNFrame(parsing: [1, 2, 3]) }
        let reply = MasterDnsVPNFrame(sessionID: 255, type: .mtuUpReply, payload: [1, 2, 3, 4, 0, 10])
        #expect(reply.bytes.count == 4 + 6)
    }

    @Test func requestsFitTheNameAndRepliesAreJudged() throws {
        let zone = try DNSName("vpn.lab.test")
        for method in 0...5 {
            let probe = MasterDnsVPNMTUProbe(cipher: try MasterDnsVPNCipher(method: method, keyText: Self.key))
            let cap = probe.uploadCapacity(zone: zone)
            let top = try #require(probe.upload(size: cap, zone: zone))
            #expect(top.nameText <= 253)
            #expect(probe.upload(size: cap + 1, zone: zone) == nil, "method \(method): \(cap + 1) must not fit")
            // The engine's own caps for a 12-character domain (docs/ENGINES.md): XOR 139, ChaCha20 123, AES 111.
            #expect(cap == [139, 139, 123, 111, 111, 111][method])
        }
        let probe = MasterDnsVPNMTUProbe(cipher: try MasterDnsVPNCipher(method: 5, keyText: Self.key))
        let up = try #require(probe.upload(size: 100, zone: zone, code: 0xDEAD_BEEF))
        func reply(_ payload: [UInt8]) -> [[UInt8]] { [MasterDnsVPNFrame(sessionID: 255, type: .mtuUpReply, payload: payload).bytes] }
        #expect(probe.judge(records: reply([0xDE, 0xAD, 0xBE, 0xEF, 0, 100]), for: up) == .passed)
        #expect(probe.judge(records: reply([0xDE, 0xAD, 0xBE, 0xEF, 0, 99]), for: up)
            == .wrongSize("the server received 99 of 100 bytes"))
        #expect(probe.judge(records: reply([0xDE, 0xAD, 0xBE, 0xEE, 0, 100]), for: up)
            == .foreign("the reply does not echo the probe's code"))

        // A download reply of 600 bytes in chunks: 0x00, count, header and 242 bytes; then id + 254 bytes.
        let down = try #require(probe.download(size: 600, uploadMTU: 100, zone: zone, code: 7))
        var frame = MasterDnsVPNFrame(sessionID: 255, type: .mtuDownReply, payload: [0, 0, 0, 7, UInt8(600 >> 8), UInt8(600 & 0xff)] + [UInt8](repeating: 0, count: 594))
        frame.fragmentCount = 1
        let raw = frame.bytes
        let chunks: [[UInt8]] = [[0, 3] + raw[0..<(11 + 242)], [1] + frame.payload[242..<496], [2] + frame.payload[496...]]
        #expect(probe.judge(records: chunks, for: down) == .passed)
        #expect(probe.judge(records: [chunks[2], chunks[0], chunks[1]], for: down) == .passed)
        if case .foreign = probe.judge(records: Array(chunks.prefix(2)), for: down) {} else { Issue.record("a missing chunk must fail") }
        #expect(probe.judge(records: [], for: down) == .foreign("noRecords"))
    }

    @Test func garbageNeverTraps() {
        var g = SystemRandomNumberGenerator()
        let seed = UInt64.random(in: 0...UInt64.max, using: &g)
        var rng = SplitMix64(seed: seed)
        print("MasterDnsVPNWireTests.garbageNeverTraps seed \(seed)")
        for _ in 0..<5000 {
            let count = Int(rng.next() % 40)
            let bytes = (0..<count).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            _ = try? MasterDnsVPNFrame(parsing: bytes)
            _ = try? MasterDnsVPNMTUProbe.assemble([bytes, Array(bytes.reversed())], base64: rng.next() % 2 == 0)
            _ = try? LowerBase36.decode(bytes)
            _ = try? MasterDnsVPNCipher(method: Int(rng.next() % 6), keyText: "k").open(bytes)
        }
    }
}

func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

