import DNSWire
import ProbeProtocol
import Testing

@Suite struct PathReplyTests {
    let key = try! ProbeKey(bytes: Array(0..<32))
    let nonce: [UInt8] = [9, 8, 7, 6, 5, 4, 3, 2]

    func sample() -> PathReply {
        // 70,000 arrivals so far: the 16-bit indexes on the wire must unwrap across 65,536.
        PathReply(drain: false, seq: 100_000, baseSeq: 99_998, receivedMicros: 1_700_000_000_123_456, arrivals: 70_000,
                  entries: [.init(copies: 2, arrivalIndex: 65_540, receivedMicros: 1_700_000_000_000_000),
                            .init(copies: 0),
                            .init(copies: 1, arrivalIndex: 69_999, receivedMicros: 1_700_000_000_123_456)])
    }

    @Test func sealAndOpenRoundTrip() throws {
        let bytes = sample().sealed(nonce: nonce, key: key)
        #expect(bytes.count == PathReply.byteCount(entries: 3))
        // Padding after the reply (a download payload) is ignored.
        #expect(try PathReply.open((bytes + [1, 2, 3])[...], nonce: nonce, key: key) == sample())
    }

    /// Total parser: every truncation and every single-bit flip is an error, never a trap or a wrong value.
    @Test func everyTruncationAndBitFlipIsRejected() throws {
        let bytes = sample().sealed(nonce: nonce, key: key)
        for length in 0..<bytes.count {
            #expect(throws: ProbeError.self) { try PathReply.open(bytes[0..<length], nonce: nonce, key: key) }
        }
        for bit in 0..<(bytes.count * 8) {
            var flipped = bytes
            flipped[bit / 8] ^= UInt8(1 << (bit % 8))
            #expect(throws: ProbeError.self) { try PathReply.open(flipped[...], nonce: nonce, key: key) }
        }
    }

    @Test func identifyRejectsNamesThatAreNotPathProbes() throws {
        let zone = try DNSName("vpn.lab.test")
        let echo = try ProbeName.build(meta: ProbeMeta(kind: .echo, nonce: nonce, totalCharacters: 48), zone: zone, key: key)
        #expect(throws: ProbeError.self) { try PathProbe.identify(echo, zone: zone, key: key) }
        #expect(throws: ProbeError.self) { try PathProbe.identify(try DNSName("x.vpn.lab.test"), zone: zone, key: key) }
        let path = try ProbeName.build(meta: PathProbe(stream: 5, seq: 6).meta(nonce: nonce, totalCharacters: 200),
                                       zone: zone, key: key)
        #expect(try PathProbe.identify(path, zone: zone, key: key).probe.seq == 6)
        // A resolver that randomises letter case upstream (DNS 0x20) does not hide the probe from a relay log.
        let shouted = try DNSName(path.description.uppercased())
        #expect(try PathProbe.identify(shouted, zone: zone, key: key).probe == PathProbe(stream: 5, seq: 6))
        // Another key: the meta block does not authenticate.
        #expect(throws: ProbeError.self) { try PathProbe.identify(path, zone: zone, key: try ProbeKey(bytes: Array(1..<33))) }
    }
}
