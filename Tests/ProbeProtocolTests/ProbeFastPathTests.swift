import Base
import DNSWire
@testable import ProbeProtocol
import Testing

/// The per-query shortcuts of issue 27, item 9 compute exactly what the general code computes.
@Suite struct ProbeFastPathTests {
    /// `sealed`, built on the stack, is the base32 of `body` and `tag(body:zone:key:)` (the reference
    /// layout, docs/PROTOCOL.md "Meta block"), for every kind, encoding and zone spelling.
    @Test func sealedMetaBlockMatchesTheReference() throws {
        var rng = SplitMix64(seed: 9)
        let zones = try ["vpn.lab.test", "VPN.Lab.Test", "a\\.b.example", "x\\200y.test"].map { try DNSName($0) }
        for zone in zones {
            for kind in ProbeKind.allCases {
                for encoding in LabelEncoding.allCases {
                    let nonce = (0..<8).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                    let parameters = (0..<10).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                    let meta = ProbeMeta(kind: kind, encoding: encoding, nonce: nonce,
                                         totalCharacters: 48 + Int(rng.next() % 150), parameters: parameters)
                    let body = meta.body
                    let reference = LabelEncoding.base32.encode(body + ProbeMeta.tag(body: body, zone: zone, key: testKey))
                    #expect(meta.sealed(zone: zone, key: testKey) == reference, "\(kind) \(encoding) \(zone)")
                    #expect(try ProbeMeta.open(reference[...], zone: zone, key: testKey) == meta)
                }
            }
        }
    }

    /// The sweep's `MetaSealer.writeEcho`, written in place from a nonce as one number, is the
    /// sealed echo meta block with that nonce (big-endian), for every filler encoding.
    @Test func echoWrittenInPlaceIsTheSealedBlock() throws {
        var rng = SplitMix64(seed: 10)
        let zone = try DNSName("VPN.Sim.Test")
        let sealer = MetaSealer(zone: zone, key: testKey)
        for encoding in LabelEncoding.allCases {
            for _ in 0..<50 {
                let value = rng.next()
                let nonce = (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * UInt64($0))) }
                let meta = ProbeMeta(kind: .echo, encoding: encoding, nonce: nonce, totalCharacters: 48)
                var written = [UInt8](repeating: 0, count: 48)
                written.withUnsafeMutableBytes { sealer.writeEcho(nonce: value, encoding: encoding, totalCharacters: 48, into: $0.baseAddress!) }
                #expect(written == meta.sealed(zone: zone, key: testKey))
            }
        }
    }

    @Test func digestCheckInPlace() {
        let bytes = Array("the characters that reached the responder".utf8)
        let digest = Keystream.digest(bytes)
        #expect(Keystream.digest(of: bytes, is: digest))
        var other = digest
        other[7] ^= 1
        #expect(!Keystream.digest(of: bytes, is: other))
        #expect(!Keystream.digest(of: bytes, is: Array(digest.prefix(7))))
    }
}
