import Crypto
@testable import ProbeProtocol
import Testing

@Suite struct KeyedHMACTests {
    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }

    static func mac(_ key: [UInt8], _ parts: [[UInt8]]) -> String {
        var hmac = KeyedHMAC(key: key)
        for part in parts { hmac.update(part) }
        return hmac.finalize { hex($0) }
    }

    /// RFC 4231 section 4.3 (test case 2) and 4.7 (test case 6, a key longer than the block).
    @Test func rfc4231Vectors() {
        #expect(Self.mac(Array("Jefe".utf8), [Array("what do ya want for nothing?".utf8)])
            == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        #expect(Self.mac([UInt8](repeating: 0xaa, count: 131), [Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)])
            == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }

    /// Byte for byte what swift-crypto's HMAC<SHA256> computes, for keys and messages around the
    /// block size, with the message split in parts.
    @Test func agreesWithSwiftCrypto() {
        var generator = SeededBytes(seed: 7)
        for keyLength in [1, 16, 32, 63, 64, 65, 100, 200] {
            for messageLength in [0, 1, 30, 55, 56, 64, 65, 300] {
                let key = generator.bytes(keyLength)
                let message = generator.bytes(messageLength)
                let split = messageLength / 3
                let ours = Self.mac(key, [Array(message[..<split]), Array(message[split...])])
                let theirs = Self.hex(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key)))
                #expect(ours == theirs, "key \(keyLength) bytes, message \(messageLength) bytes")
            }
        }
    }

    struct SeededBytes {
        var state: UInt64
        init(seed: UInt64) { state = seed }
        mutating func bytes(_ count: Int) -> [UInt8] {
            (0..<count).map { _ in
                state = state &* 6364136223846793005 &+ 1442695040888963407
                return UInt8(truncatingIfNeeded: state >> 33)
            }
        }
    }
}
