import CSHA256
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

    /// The SHA extensions and the portable C compression give the same state for the same blocks
    /// (on a CPU without the extensions there is one path only, and this checks nothing more).
    @Test func bothCompressionsAgree() {
        var generator = SeededBytes(seed: 11)
        for count in [1, 2, 3, 7] {
            let blocks = generator.bytes(64 * count)
            let start = generator.bytes(32)
            var portable: [UInt32] = (0..<8).map { (i: Int) -> UInt32 in
                var word: UInt32 = 0
                for byte in start[(4 * i)..<(4 * i + 4)] { word = word << 8 | UInt32(byte) }
                return word
            }
            var extensions = portable
            tp_sha256_compress_portable(&portable, blocks, count)
            if tp_sha256_has_extensions() != 0 {
                tp_sha256_compress_extensions(&extensions, blocks, count)
                #expect(portable == extensions, "\(count) blocks")
            }
        }
    }

    /// FIPS 180-4's own examples (the empty message, "abc", the two-block 448-bit message) and
    /// swift-crypto's SHA-256 over every length up to three blocks, fed in uneven pieces.
    @Test func sha256AgreesWithSwiftCrypto() {
        func digest(_ parts: [[UInt8]]) -> String {
            var context = tp_sha256()
            tp_sha256_init(&context)
            for part in parts { part.withUnsafeBytes { tp_sha256_update(&context, $0.baseAddress, $0.count) } }
            var out = [UInt8](repeating: 0, count: 32)
            tp_sha256_final(&context, &out)
            return Self.hex(out)
        }
        #expect(digest([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(digest([Array("abc".utf8)]) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(digest([Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)])
            == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        var generator = SeededBytes(seed: 13)
        for length in 0...192 {
            let message = generator.bytes(length)
            let cuts = [length / 5, length / 2, length - length / 7].sorted()
            let parts = [Array(message[..<cuts[0]]), Array(message[cuts[0]..<cuts[1]]), Array(message[cuts[1]..<cuts[2]]), Array(message[cuts[2]...])]
            #expect(digest(parts) == Self.hex(SHA256.hash(data: message)), "\(length) bytes")
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
