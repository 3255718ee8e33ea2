import Base
import DNSWire
import Testing

@Suite("LabelEncoding")
struct LabelEncodingTests {
    static func text(_ string: String) -> [UInt8] { Array(string.utf8) }

    @Test func base32Vectors() throws {
        // RFC 4648 10, lowercased and without padding.
        let vectors = ["": "", "f": "my", "fo": "mzxq", "foo": "mzxw6", "foob": "mzxw6yq", "fooba": "mzxw6ytb", "foobar": "mzxw6ytboi"]
        for (plain, encoded) in vectors {
            #expect(LabelEncoding.base32.encode(Self.text(plain)) == Self.text(encoded))
            #expect(try LabelEncoding.base32.decode(Self.text(encoded)) == Self.text(plain))
            #expect(try LabelEncoding.base32.decode(Self.text(encoded.uppercased())) == Self.text(plain))
        }
    }

    @Test func base64urlVectors() throws {
        let vectors = ["": "", "f": "Zg", "fo": "Zm8", "foo": "Zm9v", "foobar": "Zm9vYmFy"]
        for (plain, encoded) in vectors {
            #expect(LabelEncoding.base64url.encode(Self.text(plain)) == Self.text(encoded))
            #expect(try LabelEncoding.base64url.decode(Self.text(encoded)) == Self.text(plain))
        }
        #expect(LabelEncoding.base64url.encode([0xFB, 0xFF]) == Self.text("-_8"))
        // Case-sensitive: swapping case gives other bytes.
        #expect(try LabelEncoding.base64url.decode(Self.text("zM9V")) != Self.text("foo"))
    }

    @Test func base36Vectors() throws {
        let vectors: [([UInt8], String)] = [
            ([], ""), ([0], "0"), ([0, 0, 1], "001"), ([0xFF], "73"), ([1, 0], "74"),
            ([0x01, 0x00, 0x00, 0x00, 0x00], "1z141z4"),  // 2^32 = 4294967296
        ]
        for (bytes, encoded) in vectors {
            #expect(LabelEncoding.base36.encode(bytes) == Self.text(encoded))
            #expect(try LabelEncoding.base36.decode(Self.text(encoded)) == bytes)
            #expect(try LabelEncoding.base36.decode(Self.text(encoded.uppercased())) == bytes)
        }
    }

    @Test func base128Vectors() throws {
        // 8 bits -> two 7-bit digits, the second padded with six zero bits.
        #expect(LabelEncoding.base128.encode([0x00]) == Self.text("aa"))
        #expect(LabelEncoding.base128.encode([0xFF]) == [0xFD, 0xBE])
        #expect(try LabelEncoding.base128.decode([0xFD, 0xBE]) == [0xFF])
        #expect(LabelEncoding.base128.encode([UInt8](repeating: 0, count: 7)) == Self.text("aaaaaaaa"))
    }

    @Test func alphabets() {
        for encoding in LabelEncoding.allCases {
            let alphabet = encoding.alphabet
            #expect(Set(alphabet).count == alphabet.count, "\(encoding)")
        }
        #expect(LabelEncoding.base32.alphabet == Self.text("abcdefghijklmnopqrstuvwxyz234567"))
        #expect(LabelEncoding.base36.alphabet == Self.text("0123456789abcdefghijklmnopqrstuvwxyz"))
        #expect(LabelEncoding.base64url.alphabet.count == 64)
        #expect(LabelEncoding.base128.alphabet == Self.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") + Array(0xBC...0xFD))
        #expect(LabelEncoding.allCases.filter(\.isCaseSensitive) == [.base64url, .base128])
        #expect(LabelEncoding(rawValue: "base36") == .base36)
    }

    @Test func rejectsBadText() {
        func expectInvalid(_ encoding: LabelEncoding, _ chars: [UInt8], at offset: Int, sourceLocation: SourceLocation = #_sourceLocation) {
            do throws(DNSWireError) {
                _ = try encoding.decode(chars)
                Issue.record("\(encoding) accepted \(chars)", sourceLocation: sourceLocation)
            } catch {
                #expect(error.code == .invalidEncoding, sourceLocation: sourceLocation)
                #expect(error.offset == offset, "\(error)", sourceLocation: sourceLocation)
            }
        }
        expectInvalid(.base32, Self.text("my="), at: 2)
        expectInvalid(.base32, Self.text("m"), at: 0)          // no byte count gives 1 character
        expectInvalid(.base32, Self.text("mzx"), at: 2)        // nor 3
        expectInvalid(.base32, Self.text("mz"), at: 1)         // nonzero padding bits
        expectInvalid(.base36, Self.text("7!"), at: 1)
        expectInvalid(.base36, Self.text("a.b"), at: 1)
        expectInvalid(.base64url, Self.text("Zg+"), at: 2)
        expectInvalid(.base64url, Self.text("Zh"), at: 1)
        expectInvalid(.base64url, Self.text("Z"), at: 0)
        expectInvalid(.base128, [0xFE, 0x61], at: 0)
        expectInvalid(.base128, Self.text("ab"), at: 1)
    }

    @Test(arguments: LabelEncoding.allCases)
    func roundTripsRandomBytes(encoding: LabelEncoding) throws {
        var rng = SplitMix64(seed: 0x5EED_0000 + UInt64(encoding.rawValue.utf8.count))
        for length in 0...300 {
            for _ in 0..<3 {
                var bytes = rng.bytes(length)
                if encoding == .base36, length > 0, Bool.random(using: &rng) {
                    // Leading zero bytes are the tricky part of a positional encoding.
                    for index in 0..<Int.random(in: 0...min(length, 5), using: &rng) { bytes[index] = 0 }
                }
                let encoded = encoding.encode(bytes)
                #expect(encoded.count <= encoding.encodedLength(forBytes: length), "\(encoding) \(length)")
                #expect(encoded.allSatisfy(Set(encoding.alphabet).contains))
                #expect(try encoding.decode(encoded) == bytes, "\(encoding) \(bytes)")
                if !encoding.isCaseSensitive {
                    let upper = encoded.map { $0 >= 0x61 && $0 <= 0x7A ? $0 - 0x20 : $0 }
                    #expect(try encoding.decode(upper) == bytes)
                }
            }
        }
    }

    @Test(arguments: LabelEncoding.allCases)
    func encodedLengthIsTheExactWorstCase(encoding: LabelEncoding) {
        for length in 0...300 {
            let worst = encoding.encode([UInt8](repeating: 0xFF, count: length))
            #expect(worst.count == encoding.encodedLength(forBytes: length), "\(encoding) \(length)")
        }
    }

    @Test(arguments: LabelEncoding.allCases)
    func maxBytesInvertsEncodedLength(encoding: LabelEncoding) {
        for characters in 0...1000 {
            let bytes = encoding.maxBytes(forCharacters: characters)
            #expect(encoding.encodedLength(forBytes: bytes) <= characters)
            #expect(encoding.encodedLength(forBytes: bytes + 1) > characters, "\(encoding) \(characters)")
        }
        #expect(encoding.maxBytes(forCharacters: -5) == 0)
        #expect(encoding.encodedLength(forBytes: -5) == 0)
        #expect(encoding.encodedLength(forBytes: Int.max) == Int.max)
        #expect(encoding.maxBytes(forCharacters: Int.max) > 0)
    }

    @Test func base36LengthsMatchExactPowers() {
        // Independent check: bit length of 36^c by schoolbook multiplication, c up to 3000.
        var limbs: [UInt32] = [1]
        for characters in 1...3000 {
            var carry: UInt64 = 0
            for index in limbs.indices {
                let product = UInt64(limbs[index]) * 36 + carry
                limbs[index] = UInt32(truncatingIfNeeded: product)
                carry = product >> 32
            }
            if carry > 0 { limbs.append(UInt32(carry)) }
            let bitLength = (limbs.count - 1) * 32 + (32 - limbs[limbs.count - 1].leadingZeroBitCount)
            // 36^c >= 256^n  <=>  bitLength - 1 >= 8n, since 36^c is not a power of two.
            #expect(LabelEncoding.base36.maxBytes(forCharacters: characters) == (bitLength - 1) / 8, "\(characters)")
        }
    }

    @Test func knownCapacities() {
        #expect(LabelEncoding.base36.maxBytes(forCharacters: 237) == 153)
        #expect(LabelEncoding.base32.maxBytes(forCharacters: 237) == 148)
        #expect(LabelEncoding.base64url.maxBytes(forCharacters: 237) == 177)
        #expect(LabelEncoding.base128.maxBytes(forCharacters: 237) == 207)
        #expect(LabelEncoding.base36.encodedLength(forBytes: 153) == 237)
        #expect(LabelEncoding.base36.encodedLength(forBytes: 1) == 2)
    }
}
