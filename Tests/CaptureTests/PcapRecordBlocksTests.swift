@testable import Capture
import Foundation
import Testing

/// The block record loop (PcapRecordBlocks) against libpcap's own, record for record: the same
/// frames, wire lengths, times and link type, the same error (code, message, byte offset) after the same
/// records, on classic pcap files cut at every byte, with records longer than the snap length or than
/// libpcap's maximum, in the other byte order, with microsecond and nanosecond time stamps and with
/// time stamps libpcap reads as negative, in blocks of the default size and of a few bytes (every
/// record then crosses block edges).
@Suite struct PcapRecordBlocksTests {
    struct Outcome: Equatable {
        var frames: [[UInt8]] = []
        var wires: [Int] = []
        var times: [Int64] = []
        var links: [String] = []
        var error: CaptureError?
        var records = 0
    }

    static func read(_ path: String, blocks: Bool, blockSize: Int = PcapRecordBlocks.defaultBlockSize) -> Outcome {
        var out = Outcome()
        do {
            let reader = try CaptureFileReader(path: path, filter: nil, blockRecords: blocks, blockSize: blockSize)
            defer { out.records = reader.records }
            try reader.forEachFrame { frame, wire, time, link in
                out.frames.append(Array(frame))
                out.wires.append(wire)
                out.times.append(time)
                out.links.append(link.description)
            }
        } catch {
            out.error = error
        }
        return out
    }

    static func le32(_ v: UInt32) -> [UInt8] { withUnsafeBytes(of: v.littleEndian, Array.init) }
    static func be32(_ v: UInt32) -> [UInt8] { withUnsafeBytes(of: v.bigEndian, Array.init) }

    /// A classic pcap: magic (micro or nano), version, snap length, link type, records of (seconds,
    /// fraction, captured, wire, bytes), all in the chosen byte order.
    static func pcap(
        nano: Bool, bigEndian: Bool, snapLength: UInt32 = 65_535, linkType: UInt32 = 1,
        version: (UInt16, UInt16) = (2, 4), records: [(UInt32, UInt32, UInt32, UInt32, [UInt8])]
    ) -> [UInt8] {
        let w32 = bigEndian ? be32 : le32
        func w16(_ v: UInt16) -> [UInt8] { bigEndian ? [UInt8(v >> 8), UInt8(v & 0xff)] : [UInt8(v & 0xff), UInt8(v >> 8)] }
        var out = w32(nano ? 0xa1b2_3c4d : 0xa1b2_c3d4) + w16(version.0) + w16(version.1) + w32(0) + w32(0)
            + w32(snapLength) + w32(linkType)
        for (sec, frac, cap, wire, bytes) in records { out += w32(sec) + w32(frac) + w32(cap) + w32(wire) + bytes }
        return out
    }

    static func frame(_ n: Int) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) } }

    static let plain: [(UInt32, UInt32, UInt32, UInt32, [UInt8])] = [
        (1_700_000_000, 999_999, 60, 60, frame(60)),
        (1_700_000_001, 5, 42, 1500, frame(42)),  // cut by the capture's snap length
        (0x8000_0000, 7, 20, 20, frame(20)),  // negative seconds in a bpf_int32
        (1_700_000_002, 0xffff_ffff, 33, 33, frame(33)),  // a fraction past the second
        (1_700_000_003, 1, 0, 0, []),
        (1_700_000_004, 2, 90, 90, frame(90)),
    ]

    func compare(_ bytes: [UInt8], _ label: String) throws {
        let path = CaptureFileReaderTests.temporary()
        defer { unlink(path) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let libpcap = Self.read(path, blocks: false)
        for blockSize in [PcapRecordBlocks.defaultBlockSize, 7, 64] {
            #expect(Self.read(path, blocks: true, blockSize: blockSize) == libpcap, "\(label), \(bytes.count) bytes, blocks of \(blockSize)")
        }
    }

    @Test(arguments: [false, true], [false, true])
    func everyCutOfAFileReadsAsLibpcapReadsIt(nano: Bool, bigEndian: Bool) throws {
        let bytes = Self.pcap(nano: nano, bigEndian: bigEndian, records: Self.plain)
        for cut in 24...bytes.count { try compare(Array(bytes.prefix(cut)), "nano \(nano), big-endian \(bigEndian), cut at \(cut)") }
    }

    @Test(arguments: [false, true])
    func recordsLongerThanTheSnapLengthOrTheMaximum(bigEndian: Bool) throws {
        // Snap length 40: the 60- and 90-byte records are cut to 40 by libpcap, the rest skipped.
        let bytes = Self.pcap(nano: true, bigEndian: bigEndian, snapLength: 40, records: Self.plain)
        for cut in stride(from: 24, through: bytes.count, by: 3) { try compare(Array(bytes.prefix(cut)), "snap 40, cut at \(cut)") }
        try compare(bytes, "snap 40, whole")
        for caplen: UInt32 in [262_144, 262_145, 0x7fff_ffff, 0xffff_ffff] {
            var records = Self.plain
            records[1].2 = caplen
            try compare(Self.pcap(nano: false, bigEndian: bigEndian, records: records), "caplen \(caplen)")
            try compare(Self.pcap(nano: false, bigEndian: bigEndian, snapLength: 300_000, records: records), "caplen \(caplen), snap 300000")
        }
    }

    @Test func otherVersionsAndLinkTypesGoThroughLibpcap() throws {
        // Version 2.3 (lengths maybe swapped) and a swapped Linux cooked capture are left to libpcap: the
        // outcome is still the same.
        try compare(Self.pcap(nano: false, bigEndian: false, version: (2, 3), records: Self.plain), "version 2.3")
        try compare(Self.pcap(nano: false, bigEndian: true, linkType: 113, records: Self.plain), "SLL, big-endian")
        try compare(Self.pcap(nano: false, bigEndian: false, linkType: 113, records: Self.plain), "SLL")
    }
}
