import OSLayer
import Testing

/// The packet send path's frames: IPv4 and UDP headers with both checksums, checked against a
/// vector computed by an independent implementation (Python's struct-based RFC 1071 sum) and by
/// the receiver's own rule (the sum over a header with its checksum is all ones).
@Suite struct IPv4UDPFramerTests {
    static let source: UInt32 = 198 << 24 | 18 << 16 | 255 << 8 | 2
    static let destination: UInt32 = 198 << 24 | 19 << 16 | 7 << 8 | 9

    /// RFC 1071's receiver check, written byte by byte apart from the framer's: the ones'
    /// complement sum of `words` (big-endian pairs, an odd byte padded) folded to 16 bits.
    static func onesComplementSum(_ bytes: [UInt8]) -> UInt16 {
        var padded = bytes
        if padded.count % 2 == 1 { padded.append(0) }
        var sum: UInt32 = 0
        for i in stride(from: 0, to: padded.count, by: 2) {
            sum += UInt32(padded[i]) * 256 + UInt32(padded[i + 1])
            sum = (sum & 0xFFFF) + (sum >> 16)
        }
        return UInt16(sum)
    }

    static func frame(payload: [UInt8], port: UInt16 = 53) throws -> [UInt8] {
        let framing = PacketFraming(framer: IPv4UDPFramer(source: source, sourcePort: 40000), interfaceIndex: 1, linkAddress: [2, 0, 0, 0, 0, 1])
        let batch = framing.makeBatch(capacity: 2, payloadSize: 512)
        let appended = batch.append(to: destination, port: port) { slot in
            slot.copyBytes(from: payload)
            return payload.count
        }
        try #require(appended && batch.count == 1)
        return Array(batch.outgoing(0))
    }

    @Test func headersAndChecksumsMatchAnIndependentVector() throws {
        let payload = (1...29).map { UInt8($0) }
        let bytes = try Self.frame(payload: payload)
        #expect(bytes.count == 28 + 29)
        #expect(bytes[0] == 0x45 && bytes[8] == 64 && bytes[9] == 17)
        #expect(Int(bytes[2]) << 8 | Int(bytes[3]) == 57)
        #expect(bytes[6] == 0x40 && bytes[7] == 0, "DF set, no fragment offset")
        #expect(Array(bytes[12..<20]) == [198, 18, 255, 2, 198, 19, 7, 9])
        #expect(Array(bytes[20..<26]) == [0x9C, 0x40, 0, 53, 0, 37])
        // Python: struct.pack the same header and payload, RFC 1071 sum: 0xa882 and 0xef29.
        #expect(UInt16(bytes[10]) << 8 | UInt16(bytes[11]) == 0xA882)
        #expect(UInt16(bytes[26]) << 8 | UInt16(bytes[27]) == 0xEF29)
        #expect(Array(bytes[28...]) == payload)
    }

    /// Whatever the payload (odd and even lengths, every destination byte), the receiver's checks pass.
    @Test func receiverChecksPassForManyFrames() throws {
        var seed: UInt64 = 31
        for length in [1, 2, 47, 48, 100, 101, 480] {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            let payload = (0..<length).map { UInt8(truncatingIfNeeded: (seed >> 24) &+ UInt64($0) &* 131) }
            let port = UInt16(truncatingIfNeeded: seed >> 40) | 1
            let bytes = try Self.frame(payload: payload, port: port)
            #expect(Self.onesComplementSum(Array(bytes[0..<20])) == 0xFFFF, "IPv4 header checksum, payload \(length)")
            let udpLength = bytes.count - 20
            let pseudo: [UInt8] = Array(bytes[12..<20]) + [0, 17, UInt8(udpLength >> 8), UInt8(udpLength & 0xFF)]
            #expect(Self.onesComplementSum(pseudo + Array(bytes[20...])) == 0xFFFF, "UDP checksum, payload \(length)")
            #expect(bytes[26] != 0 || bytes[27] != 0, "the UDP checksum is computed, never left 0")
        }
    }

    /// The checksum as RFC 1071 defines it (the byte-by-byte sum above), for every length up to
    /// 70 bytes and any initial pseudo-header sum: the framer sums four bytes per step.
    @Test func checksumIsTheOnesComplementOfTheSum() {
        var seed: UInt64 = 5
        for length in 0...70 {
            let bytes = (0..<length).map { _ in
                seed = seed &* 6364136223846793005 &+ 1442695040888963407
                return UInt8(truncatingIfNeeded: seed >> 33)
            }
            let initial = UInt32(truncatingIfNeeded: seed >> 40) & 0x3_FFFF
            var folded = UInt32(Self.onesComplementSum(bytes)) + (initial & 0xFFFF) + (initial >> 16)
            while folded >> 16 != 0 { folded = (folded & 0xFFFF) + (folded >> 16) }
            let expected = ~UInt16(truncatingIfNeeded: folded)
            let computed = bytes.withUnsafeBytes { IPv4UDPFramer.checksum($0, initial: initial) }
            #expect(computed == expected, "\(length) bytes")
        }
    }

    @Test func aPayloadThatDoesNotFitIsRefused() {
        let framing = PacketFraming(framer: IPv4UDPFramer(source: Self.source, sourcePort: 1), interfaceIndex: 1, linkAddress: [])
        let batch = framing.makeBatch(capacity: 1, payloadSize: 16)
        #expect(!batch.append(to: Self.destination, port: 53) { _ in 17 })
        #expect(batch.count == 0)
    }
}
