@testable import Capture
import Foundation
import Testing

@Suite struct CaptureFileReaderTests {
    typealias F = FrameBuilder
    static let dns: [UInt8] = [0xab, 0xcd, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0x62, 0, 0, 16, 0, 1]
    static let packet4 = F.ipv4(source: "198.51.100.2", destination: "198.51.100.1", F.udp(sourcePort: 40000, destinationPort: 53, payload: dns))
    static let packet6 = F.ipv6(source: "2001:db8::2", destination: "2001:db8::1", F.udp(sourcePort: 40000, destinationPort: 53, payload: dns))

    static func temporary(_ suffix: String = "pcap") -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("tp-cap-\(UUID().uuidString).\(suffix)").path
    }

    /// Reads a file and decodes every record; returns the packets and the reader.
    static func readAll(_ path: String) throws -> (CaptureFileReader, [DecodedPacket]) {
        let reader = try CaptureFileReader(path: path)
        var decoder = PacketDecoder(linkType: reader.linkType)
        var packets: [DecodedPacket] = []
        try reader.forEachFrame { frame, wire, time in
            if let p = decoder.decodePacket(frame, wireLength: wire, timestampNanos: time) { packets.append(p) }
        }
        return (reader, packets)
    }

    static let linkFrames: [(LinkType, [UInt8])] = [
        (.ethernet, F.ethernet(vlans: [42], packet4)),
        (.linuxSLL, F.linuxSLL(packet4)),
        (.linuxSLL2, F.linuxSLL2(etherType: 0x86dd, packet6)),
        (.raw, packet6),
        (.ipv4, packet4),
        (.ipv6, packet6),
        (.null, F.null(packet4)),
        (.loop, F.loop(family: 24, packet6)),
    ]

    @Test(arguments: linkFrames.indices)
    func everyLinkTypeRoundTripsThroughLibpcap(_ index: Int) throws {
        let (linkType, frame) = Self.linkFrames[index]
        let path = Self.temporary()
        defer { unlink(path) }
        let writer = try PcapWriter(path: path, linkType: linkType)
        writer.write(frame, timestampNanos: 1_700_000_000_123_456_789)
        writer.close()
        let (reader, packets) = try Self.readAll(path)
        #expect(reader.linkType == linkType)
        #expect(reader.format == "pcap")
        #expect(packets.count == 1)
        #expect(packets.first?.payload == Self.dns)
        #expect(packets.first?.timestampNanos == 1_700_000_000_123_456_789)
    }

    @Test func microsecondPcapGivesNanosecondsTimesAThousand() throws {
        let path = Self.temporary()
        defer { unlink(path) }
        let writer = try PcapWriter(path: path, linkType: .raw, nanosecond: false)
        writer.write(Self.packet4, timestampNanos: 1_700_000_000_123_456_789)
        writer.close()
        let (_, packets) = try Self.readAll(path)
        #expect(packets.first?.timestampNanos == 1_700_000_000_123_456_000)
    }

    /// A pcapng written byte by byte: one section, two Ethernet interfaces with if_tsresol 6 (microseconds)
    /// and 9 (nanoseconds), one enhanced packet block on each. (Two RAW interfaces would not do: libpcap
    /// 1.10 compares the second interface's LINKTYPE_RAW 101 with the first one's DLT_RAW 12 and refuses.)
    static func pcapngTwoInterfaces() -> [UInt8] {
        func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xff), UInt8((v >> 8) & 0xff)] }
        func le32(_ v: Int) -> [UInt8] { le16(v & 0xffff) + le16((v >> 16) & 0xffff) }
        func block(_ type: Int, _ body: [UInt8]) -> [UInt8] {
            let padded = body + [UInt8](repeating: 0, count: (4 - body.count % 4) % 4)
            return le32(type) + le32(12 + padded.count) + padded + le32(12 + padded.count)
        }
        let shb = block(0x0a0d_0d0a, le32(0x1a2b_3c4d) + le16(1) + le16(0) + [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff])
        func idb(resolution: UInt8) -> [UInt8] {
            block(1, le16(1) + le16(0) + le32(65535) + le16(9) + le16(1) + [resolution, 0, 0, 0] + le16(0) + le16(0))
        }
        func epb(interface: Int, ticks: UInt64, _ data: [UInt8]) -> [UInt8] {
            let padded = data + [UInt8](repeating: 0, count: (4 - data.count % 4) % 4)
            return block(6, le32(interface) + le32(Int(ticks >> 32)) + le32(Int(ticks & 0xffff_ffff)) + le32(data.count) + le32(data.count) + padded)
        }
        return shb + idb(resolution: 6) + idb(resolution: 9)
            + epb(interface: 0, ticks: 1_700_000_000_000_001, F.ethernet(packet4))          // microseconds
            + epb(interface: 1, ticks: 1_700_000_000_000_002_003, F.ethernet(etherType: 0x86dd, packet6))      // nanoseconds
    }

    @Test func pcapngWithTwoInterfacesOfDifferentResolution() throws {
        let path = Self.temporary("pcapng")
        defer { unlink(path) }
        try Data(Self.pcapngTwoInterfaces()).write(to: URL(fileURLWithPath: path))
        let (reader, packets) = try Self.readAll(path)
        #expect(reader.format == "pcapng")
        #expect(reader.linkType == .ethernet)
        #expect(packets.map(\.timestampNanos) == [1_700_000_000_000_001_000, 1_700_000_000_000_002_003])
        #expect(packets.map(\.ipVersion) == [4, 6])
    }

    /// A pcapng truncated while it is read (the reader maps it): the records before the cut are
    /// delivered, then a typed error says the file changed, where the read past its new end used to
    /// end the process with SIGBUS.
    @Test func aPcapngTruncatedWhileReadIsAnErrorNotSIGBUS() throws {
        func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xff), UInt8((v >> 8) & 0xff)] }
        func le32(_ v: Int) -> [UInt8] { le16(v & 0xffff) + le16((v >> 16) & 0xffff) }
        func block(_ type: Int, _ body: [UInt8]) -> [UInt8] {
            let padded = body + [UInt8](repeating: 0, count: (4 - body.count % 4) % 4)
            return le32(type) + le32(12 + padded.count) + padded + le32(12 + padded.count)
        }
        let frame = F.ethernet(Self.packet4)
        var bytes = block(0x0a0d_0d0a, le32(0x1a2b_3c4d) + le16(1) + le16(0) + [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff])
            + block(1, le16(1) + le16(0) + le32(65535))
        let records = 1_000  // about 100 KiB: many pages past the cut
        for i in 0..<records {
            let ticks = 1_700_000_000_000_000 + i
            bytes += block(6, le32(0) + le32(ticks >> 32) + le32(ticks & 0xffff_ffff) + le32(frame.count) + le32(frame.count) + frame)
        }
        let path = Self.temporary("pcapng")
        defer { unlink(path) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let reader = try CaptureFileReader(path: path)
        var seen = 0
        do {
            try reader.forEachFrame { _, _, _ in
                seen += 1
                if seen == 1 { #expect(truncate(path, 8_192) == 0) }
            }
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .corrupt)
            #expect(error.description.contains("shrank"), "\(error)")
        }
        #expect(seen >= 1 && seen < records)
    }

    func threePacketPcap() throws -> (String, [UInt8]) {
        let path = Self.temporary()
        let writer = try PcapWriter(path: path, linkType: .raw)
        for i in 0..<3 { writer.write(Self.packet4, timestampNanos: Int64(i) * 1_000_000) }
        writer.close()
        return (path, Array(try Data(contentsOf: URL(fileURLWithPath: path))))
    }

    @Test func aCutFileDeliversWhatCameBeforeAndNamesTheOffset() throws {
        let (path, bytes) = try threePacketPcap()
        defer { unlink(path) }
        try Data(bytes.dropLast(10)).write(to: URL(fileURLWithPath: path))
        let reader = try CaptureFileReader(path: path)
        var seen = 0
        do {
            try reader.forEachFrame { _, _, _ in seen += 1 }
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .corrupt)
            #expect(error.offset == 24 + 2 * (16 + Self.packet4.count))
            #expect(error.description.contains("byte offset"))
        }
        #expect(seen == 2)
    }

    @Test func anImpossibleRecordLengthIsCorruptNotACrash() throws {
        let (path, bytes) = try threePacketPcap()
        defer { unlink(path) }
        var corrupt = bytes
        let second = 24 + 16 + Self.packet4.count
        corrupt.replaceSubrange((second + 8)..<(second + 12), with: [0xff, 0xff, 0xff, 0x7f])  // caplen, little-endian
        try Data(corrupt).write(to: URL(fileURLWithPath: path))
        let reader = try CaptureFileReader(path: path)
        var seen = 0
        #expect(throws: CaptureError.self) { try reader.forEachFrame { _, _, _ in seen += 1 } }
        #expect(seen == 1)
    }

    @Test func emptyNotACaptureAndMissingFilesAreTypedErrors() throws {
        let empty = Self.temporary(), text = Self.temporary("txt"), header = Self.temporary()
        defer { unlink(empty); unlink(text); unlink(header) }
        try Data().write(to: URL(fileURLWithPath: empty))
        try Data("hello, this is not a capture\n".utf8).write(to: URL(fileURLWithPath: text))
        try Data([0xd4, 0xc3, 0xb2, 0xa1, 2, 0]).write(to: URL(fileURLWithPath: header))  // pcap magic, header cut
        func code(_ path: String) -> CaptureError.Code? {
            do { _ = try CaptureFileReader(path: path); return nil } catch { return error.code }
        }
        #expect(code(empty) == .emptyFile)
        #expect(code(text) == .notACapture)
        #expect(code(header) == .corrupt)
        #expect(code("/nonexistent/tp-\(UUID().uuidString).pcap") == .cannotOpen)
    }

    @Test func aBPFFilterIsAppliedWhileReading() throws {
        let path = Self.temporary()
        defer { unlink(path) }
        let writer = try PcapWriter(path: path, linkType: .raw)
        writer.write(Self.packet4, timestampNanos: 0)
        writer.write(Self.packet6, timestampNanos: 1)
        writer.close()
        let reader = try CaptureFileReader(path: path, filter: "ip6")
        var seen = 0
        try reader.forEachFrame { _, _, _ in seen += 1 }
        #expect(seen == 1)
        #expect(throws: CaptureError.self) { try CaptureFileReader(path: path, filter: "not a filter (") }
    }
}
