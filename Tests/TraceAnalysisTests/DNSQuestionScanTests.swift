import Testing
@testable import TraceAnalysis

/// The question scan reads names in place; a compressed name is gathered into the scratch buffer and
/// must hash as its uncompressed, lower-cased equivalent.
@Suite struct DNSQuestionScanTests {
    static func scan(_ message: [UInt8]) -> (DNSQuestionScan, [UInt64])? {
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 256, alignment: 8)
        let starts = UnsafeMutableBufferPointer<Int>.allocate(capacity: DNSQuestionScan.maxLabels + 1)
        defer {
            scratch.deallocate()
            starts.deallocate()
        }
        var out = DNSQuestionScan()
        // The suffix hashes read the name in place: ask for them while the message is still in reach.
        let suffixes: [UInt64]? = message.withUnsafeBytes { bytes in
            guard DNSQuestionScan.scan(bytes, scratch: scratch, labelStarts: starts, into: &out) == nil else { return nil }
            return (0...out.labelCount).map { out.suffixHash($0, labelStarts: starts) }
        }
        guard let suffixes else { return nil }
        out.name = nil  // the buffers are gone
        return (out, suffixes)
    }

    static let header: [UInt8] = [0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]

    @Test func aCompressedNameHashesAsItsPlainForm() throws {
        // "aBc" then a pointer to offset 6 (ANCOUNT, two zero octets: the root).
        let compressed = Self.header + [3, 0x61, 0x42, 0x63, 0xc0, 6, 0, 16, 0, 1]
        let plain = Self.header + [3, 0x61, 0x62, 0x63, 0, 0, 16, 0, 1]
        let (c, cs) = try #require(Self.scan(compressed))
        let (p, ps) = try #require(Self.scan(plain))
        #expect(c.labelCount == 1 && p.labelCount == 1)
        #expect(c.nameHash == p.nameHash)
        #expect(cs == ps)
        #expect(c.qtype == 16 && p.qtype == 16)
    }

    @Test func suffixesOfALongNameDifferAndIgnoreCase() throws {
        func message(_ labels: [String]) -> [UInt8] {
            var m = Self.header
            for l in labels { m += [UInt8(l.utf8.count)] + Array(l.utf8) }
            return m + [0, 0, 16, 0, 1]
        }
        let long = String(repeating: "Ab2", count: 16)
        let (a, sa) = try #require(Self.scan(message([long, "t", "Example", "com"])))
        let (b, sb) = try #require(Self.scan(message([long.lowercased(), "T", "EXAMPLE", "COM"])))
        let (c, _) = try #require(Self.scan(message(["t", "example", "com"])))
        #expect(a.nameHash == b.nameHash)
        #expect(sa == sb)
        #expect(Set(sa).count == sa.count)
        #expect(sa[1] == c.nameHash)  // the suffix from "t" on is the name t.example.com
    }

    /// The 16-byte steps of the hash are multiplied apart and then chained: where a block stands still
    /// counts. A label of four 16-byte blocks and the same label with two of them swapped, and names
    /// whose labels differ in one byte of any block, all hash apart.
    @Test func blocksInAnotherOrderOrOneByteApartHashApart() throws {
        func name(_ label: [UInt8]) -> [UInt8] { Self.header + [UInt8(label.count)] + label + [0, 0, 16, 0, 1] }
        let blocks: [[UInt8]] = (0..<4).map { b in (0..<16).map { UInt8(ascii: "a") + UInt8((b * 7 + $0) % 26) } }
        // The length octet comes first: the label's first step covers it and 15 bytes of the label.
        let label = Array(blocks.joined().prefix(63))
        var swapped = label
        swapped[15..<31] = label[31..<47]
        swapped[31..<47] = label[15..<31]
        let (a, _) = try #require(Self.scan(name(label)))
        let (b, _) = try #require(Self.scan(name(swapped)))
        #expect(label != swapped && a.nameHash != b.nameHash)
        var hashes: Set<UInt64> = [a.nameHash]
        for i in label.indices {
            var changed = label
            changed[i] = changed[i] == UInt8(ascii: "z") ? UInt8(ascii: "y") : changed[i] + 1
            hashes.insert(try #require(Self.scan(name(changed))).0.nameHash)
        }
        #expect(hashes.count == label.count + 1)
    }
}
