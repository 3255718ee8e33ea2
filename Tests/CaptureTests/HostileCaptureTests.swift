import Base
@testable import Capture
import Foundation
import Testing
import TestSupport

/// The captures of the issue "Nothing left behind, no crash": each once crashed `trace`, stopped it
/// early or made it report a figure nobody measured. Every one yields a value or a typed error.
@Suite struct HostileCaptureTests {
    typealias F = FrameBuilder
    static let dns: [UInt8] = [0xab, 0xcd, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0x62, 0, 0, 16, 0, 1]
    static let packet4 = F.ipv4(source: "198.51.100.2", destination: "198.51.100.1", F.udp(sourcePort: 40000, destinationPort: 53, payload: dns))
    static let packet6 = F.ipv6(source: "2001:db8::2", destination: "2001:db8::1", F.udp(sourcePort: 40000, destinationPort: 53, payload: dns))

    /// Writes the bytes to a temporary file, reads every record with its own link type and decodes it.
    static func read(_ bytes: [UInt8], filter: String? = nil) throws(CaptureError)
        -> (reader: CaptureFileReader, packets: [DecodedPacket], error: CaptureError?) {
        let path = CaptureFileReaderTests.temporary("pcapng")
        defer { unlink(path) }
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        let reader = try CaptureFileReader(path: path, filter: filter)
        var decoder = PacketDecoder(linkType: reader.linkType)
        var packets: [DecodedPacket] = []
        do {
            try reader.forEachFrame { frame, wire, time, link in
                if let p = decoder.decodePacket(frame, linkType: link, wireLength: wire, timestampNanos: time) { packets.append(p) }
            }
            return (reader, packets, nil)
        } catch {
            return (reader, packets, error)
        }
    }

    // MARK: - Timestamps

    @Test func aTimestampPast2262IsACorruptRecordNotACrash() throws {
        var b = PcapngBuilder()
        b.section(bigEndian: false)
        b.interface(linkType: 101, resolution: 9)
        b.packet(interface: 0, ticks: 1_700_000_000_000_000_000, Self.packet4)
        b.packet(interface: 0, ticks: 9_300_000_000_000_000_000, Self.packet4)  // 2264-09: past Int64 nanoseconds
        let (_, packets, error) = try Self.read(b.bytes)
        #expect(packets.count == 1)
        #expect(error?.code == .timestampOutOfRange)
        #expect(error?.offset == b.blockOffsets[3])
    }

    @Test func theLargestTicksAtEveryResolutionGiveAValueOrAnError() throws {
        let resolutions: [UInt8] = [0, 3, 6, 9, 12, 19, 30, 127, 0x80, 0x80 | 10, 0x80 | 30, 0x80 | 64, 0x80 | 100, 0xff]
        for resolution in resolutions {
            var b = PcapngBuilder()
            b.section(bigEndian: false)
            b.interface(linkType: 101, resolution: resolution)
            b.packet(interface: 0, ticks: .max, Self.packet4)
            b.packet(interface: 0, ticks: 1 << 40, Self.packet4)
            let (_, packets, error) = try Self.read(b.bytes)
            #expect(packets.count + (error == nil ? 0 : 1) >= 1, "resolution \(resolution)")
        }
    }

    @Test func resolutionsAndOffsetsConvertExactly() throws {
        var b = PcapngBuilder()
        b.section(bigEndian: false)
        b.interface(linkType: 101, resolution: 0x80 | 30)                        // 2^-30 s
        b.interface(linkType: 101, resolution: 12, offsetSeconds: 1_000)          // picoseconds, +1000 s
        b.interface(linkType: 101, resolution: 6, offsetSeconds: -2_000_000_000)  // before 1970: out of range
        b.packet(interface: 0, ticks: 3 << 30 | 1 << 29, Self.packet4)             // 3.5 s
        b.packet(interface: 1, ticks: 2_000_000_000_001_234, Self.packet4)         // 2000.000000001 s + 1000 s
        b.packet(interface: 2, ticks: 5, Self.packet4)
        let (_, packets, error) = try Self.read(b.bytes)
        #expect(packets.map(\.timestampNanos) == [3_500_000_000, 3_000_000_000_001])
        #expect(error?.code == .timestampOutOfRange && error?.offset == b.blockOffsets[6])
    }

    // MARK: - Sections and interfaces

    @Test func aBigEndianSecondSectionIsReadInItsOwnByteOrder() throws {
        var b = PcapngBuilder()
        b.section(bigEndian: false)
        b.interface(linkType: 1, resolution: 9)
        b.packet(interface: 0, ticks: 1_700_000_000_000_000_001, F.ethernet(Self.packet4))
        b.section(bigEndian: true)
        b.interface(linkType: 101)
        b.packet(interface: 0, ticks: 1_700_000_000_000_002, Self.packet6)
        b.simplePacket(Self.packet4)
        let (reader, packets, error) = try Self.read(b.bytes)
        #expect(error == nil)
        #expect(packets.map(\.ipVersion) == [4, 6, 4])
        #expect(packets.map(\.timestampNanos) == [1_700_000_000_000_000_001, 1_700_000_000_000_002_000, 1_700_000_000_000_002_000])
        #expect(reader.records == 3)
        #expect(reader.linkTypeDescription == "ETHERNET+RAW")
    }

    /// Wireshark on eth0 and a tun device: EN10MB, RAW and LINUX_SLL in one file (libpcap refuses it).
    @Test func interfacesOfDifferentLinkTypesAreEachDecodedWithTheirOwn() throws {
        var b = PcapngBuilder()
        b.section(bigEndian: false)
        b.interface(linkType: 1)
        b.interface(linkType: 101)
        b.interface(linkType: 113)
        b.interface(linkType: 276)
        b.packet(interface: 0, ticks: 1, F.ethernet(Self.packet4))
        b.packet(interface: 1, ticks: 2, Self.packet6)
        b.packet(interface: 2, ticks: 3, F.linuxSLL(Self.packet4))
        b.packet(interface: 3, ticks: 4, F.linuxSLL2(etherType: 0x86dd, Self.packet6))
        let (reader, packets, error) = try Self.read(b.bytes)
        #expect(error == nil)
        #expect(packets.map(\.payload) == Array(repeating: Self.dns, count: 4))
        #expect(packets.map(\.ipVersion) == [4, 6, 4, 6])
        #expect(reader.linkType == .ethernet)
        #expect(reader.linkTypeDescription == "ETHERNET+RAW+LINUX_SLL+LINUX_SLL2")
        // A filter is compiled for each interface's link type.
        let filtered = try Self.read(b.bytes, filter: "ip6")
        #expect(filtered.packets.map(\.ipVersion) == [6, 6])
        #expect(filtered.reader.records == 2)
    }

    @Test func inconsistentBlocksAreCorruptWithTheirOffset() throws {
        var b = PcapngBuilder()
        b.section(bigEndian: false)
        b.interface(linkType: 101)
        b.packet(interface: 0, ticks: 1, Self.packet4)
        var lengths = b
        lengths.append([6, 0, 0, 0, 32, 0, 0, 0] + [UInt8](repeating: 0, count: 20) + [36, 0, 0, 0])  // trailing length differs
        var interface = b
        interface.packet(interface: 7, ticks: 2, Self.packet4)
        var past = b
        past.append([6, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0])  // 256 bytes claimed, 12 there
        var magic = b
        magic.append([0x0a, 0x0d, 0x0d, 0x0a, 28, 0, 0, 0, 1, 2, 3, 4] + [UInt8](repeating: 0, count: 12) + [28, 0, 0, 0])
        for (bytes, text) in [(lengths, "trailing length"), (interface, "interface 7"), (past, "the file has"), (magic, "byte-order magic")] {
            let (_, packets, error) = try Self.read(bytes.bytes)
            #expect(packets.count == 1)
            #expect(error?.code == .corrupt)
            #expect(error?.offset == bytes.blockOffsets.last)
            #expect(error?.reason.contains(text) == true, "\(error?.reason ?? "no error")")
        }
    }

    // MARK: - PPP and PPPoE

    @Test func pppoeSessionsOverEthernetCarryIPv4AndIPv6() {
        func pppoe(_ proto: Int, _ packet: [UInt8]) -> [UInt8] {
            F.ethernet(etherType: 0x8864, [0x11, 0x00] + F.be16(0x1234) + F.be16(packet.count + 2) + F.be16(proto) + packet)
        }
        var decoder = PacketDecoder(linkType: .ethernet)
        var versions: [Int] = []
        for frame in [pppoe(0x0021, Self.packet4), pppoe(0x0057, Self.packet6), pppoe(0xc021, [1, 1, 0, 4]),
                      F.ethernet(etherType: 0x8863, [0x11, 0x09, 0, 0, 0, 0])] {
            frame.withUnsafeBytes { bytes in
                if let p = decoder.decodePacket(bytes, wireLength: frame.count, timestampNanos: 0) { versions.append(p.ipVersion) }
            }
        }
        #expect(versions == [4, 6])
        #expect(decoder.undecoded[.notIP] == 2)  // LCP and a discovery frame
    }

    @Test func pppFramingsAreDecoded() {
        let frames: [(LinkType, [UInt8], Int)] = [
            (.ppp, [0xff, 0x03, 0x00, 0x21] + Self.packet4, 4),   // RFC 1662 address and control
            (.ppp, [0x00, 0x57] + Self.packet6, 6),               // bare protocol field
            (.ppp, [0x21] + Self.packet4, 4),                     // compressed protocol field
            (.pppSerial, [0xff, 0x03, 0x00, 0x57] + Self.packet6, 6),
            (.pppSerial, [0x0f, 0x00, 0x08, 0x00] + Self.packet4, 4),  // Cisco HDLC
            (.pppoe, [0x11, 0x00, 0, 1] + F.be16(Self.packet4.count + 2) + [0x00, 0x21] + Self.packet4, 4),
        ]
        for (linkType, frame, version) in frames {
            var decoder = PacketDecoder(linkType: linkType)
            let packet = frame.withUnsafeBytes { decoder.decodePacket($0, wireLength: frame.count, timestampNanos: 0) }
            #expect(packet?.ipVersion == version, "\(linkType)")
            #expect(packet?.payload == Self.dns, "\(linkType)")
        }
        #expect(LinkType(dlt: 9) == .ppp && LinkType(dlt: 50) == .pppSerial && LinkType(dlt: 51) == .pppoe)
    }

    // MARK: - Snap length

    @Test func aUDPDatagramCutAfterItsHeaderStillDecodesAndSaysWhatIsMissing() {
        let answer = F.ipv4(source: "198.51.100.1", destination: "198.51.100.2",
                            F.udp(sourcePort: 53, destinationPort: 40000, payload: Self.dns + [UInt8](repeating: 7, count: 400)))
        let frame = F.ethernet(answer)
        var decoder = PacketDecoder(linkType: .ethernet)
        let packet = Array(frame[0..<128]).withUnsafeBytes { decoder.decodePacket($0, wireLength: frame.count, timestampNanos: 0) }
        #expect(packet?.payload.count == 128 - 42)
        #expect(packet?.header.missingBytes == frame.count - 128)
        #expect(packet?.header.ipLength == answer.count)
        // A cut TCP segment or fragment is not decoded: what is rebuilt from it would be wrong.
        let tcp = F.ethernet(F.ipv4(source: "198.51.100.1", destination: "198.51.100.2", proto: 6,
                                    F.tcp(sourcePort: 53, destinationPort: 40000, sequence: 1, payload: [UInt8](repeating: 1, count: 300))))
        let cutTCP = Array(tcp[0..<128]).withUnsafeBytes { decoder.decodePacket($0, wireLength: tcp.count, timestampNanos: 0) }
        #expect(cutTCP == nil)
        #expect(decoder.undecoded[.snapTruncated] == 1)
        // IPv6 the same way.
        let answer6 = F.ipv6(source: "2001:db8::1", destination: "2001:db8::2",
                             F.udp(sourcePort: 53, destinationPort: 40000, payload: Self.dns + [UInt8](repeating: 7, count: 400)))
        let frame6 = F.ethernet(etherType: 0x86dd, answer6)
        let packet6 = Array(frame6[0..<128]).withUnsafeBytes { decoder.decodePacket($0, wireLength: frame6.count, timestampNanos: 0) }
        #expect(packet6?.payload.count == 128 - 14 - 40 - 8)
        #expect(packet6?.header.missingBytes == frame6.count - 128)
    }
}
