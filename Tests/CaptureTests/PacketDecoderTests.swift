import Base
@testable import Capture
import Testing

@Suite struct PacketDecoderTests {
    typealias F = FrameBuilder
    static let dns: [UInt8] = [0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0x61, 0, 0, 1, 0, 1]
    static let udp4 = F.ipv4(source: "198.18.0.2", destination: "198.18.0.1",
                             F.udp(sourcePort: 40000, destinationPort: 53, payload: dns))

    func decode(_ linkType: LinkType, _ frames: [[UInt8]]) -> (PacketDecoder, [DecodedPacket]) {
        var decoder = PacketDecoder(linkType: linkType)
        var packets: [DecodedPacket] = []
        for (i, frame) in frames.enumerated() {
            frame.withUnsafeBytes { bytes in
                if let p = decoder.decodePacket(bytes, wireLength: frame.count, timestampNanos: Int64(i)) { packets.append(p) }
            }
        }
        decoder.finish()
        return (decoder, packets)
    }

    func expectDNS4(_ packets: [DecodedPacket]) {
        #expect(packets.count == 1)
        guard let p = packets.first else { return }
        #expect(p.source.description == "198.18.0.2")
        #expect(p.destination.description == "198.18.0.1")
        #expect(p.transport == .udp && p.sourcePort == 40000 && p.destinationPort == 53)
        #expect(p.payload == Self.dns)
        #expect(p.header.ipLength == 20 + 8 + Self.dns.count)
    }

    @Test(arguments: [LinkType.ethernet, .linuxSLL, .linuxSLL2, .null, .loop, .raw, .ipv4])
    func everyLinkTypeCarriesIPv4UDP(_ linkType: LinkType) {
        let frame: [UInt8] = switch linkType {
        case .ethernet: F.ethernet(Self.udp4)
        case .linuxSLL: F.linuxSLL(Self.udp4)
        case .linuxSLL2: F.linuxSLL2(Self.udp4)
        case .null: F.null(Self.udp4)
        case .loop: F.loop(Self.udp4)
        default: Self.udp4
        }
        let (decoder, packets) = decode(linkType, [frame])
        expectDNS4(packets)
        #expect(decoder.undecoded.total == 0)
    }

    @Test func ethernetWithStackedVLANTags() {
        let (_, packets) = decode(.ethernet, [F.ethernet(vlans: [100, 200], Self.udp4)])
        expectDNS4(packets)
    }

    @Test(arguments: [LinkType.ipv6, .raw, .ethernet, .linuxSLL2, .null])
    func ipv6UDPWithAnExtensionHeader(_ linkType: LinkType) {
        let udp = F.udp(sourcePort: 5353, destinationPort: 53, payload: Self.dns)
        // A destination-options header (8 bytes, next = UDP) before the UDP header.
        let packet = F.ipv6(source: "2001:db8::2", destination: "2001:db8::1", next: 60, [17, 0, 1, 4, 0, 0, 0, 0] + udp)
        let frame: [UInt8] = switch linkType {
        case .ethernet: F.ethernet(etherType: 0x86dd, packet)
        case .linuxSLL2: F.linuxSLL2(etherType: 0x86dd, packet)
        case .null: F.null(family: 10, packet)
        default: packet
        }
        let (_, packets) = decode(linkType, [frame])
        #expect(packets.count == 1)
        #expect(packets.first?.source.description == "2001:db8::2")
        #expect(packets.first?.destination.description == "2001:db8::1")
        #expect(packets.first?.ipVersion == 6)
        #expect(packets.first?.payload == Self.dns)
    }

    @Test func tcpSegmentKeepsSequenceAndData() {
        let segment = F.tcp(sourcePort: 40001, destinationPort: 53, sequence: 1000, payload: [0, 2, 0xab, 0xcd])
        let (_, packets) = decode(.raw, [F.ipv4(source: "198.18.0.2", destination: "198.18.0.1", proto: 6, segment)])
        #expect(packets.first?.transport == .tcp)
        #expect(packets.first?.header.tcpSequence == 1000)
        #expect(packets.first?.payload == [0, 2, 0xab, 0xcd])
    }

    @Test func ipv4FragmentsAreReassembledInAnyOrder() {
        let payload = [UInt8](repeating: 0x5a, count: 3000)
        let udp = F.udp(sourcePort: 53, destinationPort: 40000, payload: payload)
        let cuts = [0, 1480, 2960]
        var frames: [[UInt8]] = []
        for (i, start) in cuts.enumerated() {
            let end = i + 1 < cuts.count ? cuts[i + 1] : udp.count
            frames.append(F.ipv4(source: "198.18.0.1", destination: "198.18.0.2", id: 77,
                                 fragment: (start, i + 1 < cuts.count), Array(udp[start..<end])))
        }
        let (decoder, packets) = decode(.raw, [frames[2], frames[0], frames[1]])
        #expect(packets.count == 1)
        #expect(packets.first?.payload == payload)
        #expect(packets.first?.header.reassembled == true)
        #expect(decoder.undecoded.total == 0)
    }

    @Test func anIncompleteDatagramCountsItsFragmentsAsUnreassembled() {
        let udp = F.udp(sourcePort: 53, destinationPort: 40000, payload: [UInt8](repeating: 1, count: 2000))
        let first = F.ipv4(source: "198.18.0.1", destination: "198.18.0.2", id: 9, fragment: (0, true), Array(udp[0..<1480]))
        let (decoder, packets) = decode(.raw, [first])
        #expect(packets.isEmpty)
        #expect(decoder.undecoded[.fragmentUnreassembled] == 1)
    }

    @Test func badFramesAreCountedByReason() {
        let icmp = F.ipv4(source: "198.18.0.1", destination: "198.18.0.2", proto: 1, [8, 0, 0, 0])
        let frames: [[UInt8]] = [
            [0x45, 0],  // cut IPv4 header
            F.ethernet(etherType: 0x0806, [0, 1]),  // ARP
            [1, 2, 3],  // shorter than Ethernet
            F.ethernet(icmp),
            F.ethernet([0x45, 0, 0, 10] + [UInt8](repeating: 0, count: 16)),  // total length < header
            F.ethernet(F.ipv4(source: "198.18.0.1", destination: "198.18.0.2", [0, 53, 0, 53, 0, 99, 0, 0])),  // UDP length past the end
        ]
        let (decoder, packets) = decode(.ethernet, frames)
        #expect(packets.isEmpty)
        #expect(decoder.undecoded[.linkTruncated] == 2)
        #expect(decoder.undecoded[.notIP] == 1)
        #expect(decoder.undecoded[.otherTransport] == 1)
        #expect(decoder.undecoded[.ipMalformed] == 1)
        #expect(decoder.undecoded[.transportMalformed] == 1)
        var other = PacketDecoder(linkType: .other(147))
        _ = [UInt8](Self.udp4).withUnsafeBytes { other.decodePacket($0, wireLength: 48, timestampNanos: 0) }
        #expect(other.undecoded[.unsupportedLinkType] == 1)
    }

    @Test func aSnapLengthCutIsNotCorruption() {
        let frame = F.ethernet(Self.udp4)
        var decoder = PacketDecoder(linkType: .ethernet)
        Array(frame[0..<40]).withUnsafeBytes { _ = decoder.decodePacket($0, wireLength: frame.count, timestampNanos: 0) }
        Array(frame[0..<40]).withUnsafeBytes { _ = decoder.decodePacket($0, wireLength: 40, timestampNanos: 0) }
        #expect(decoder.undecoded[.snapTruncated] == 1)
        #expect(decoder.undecoded[.ipTruncated] == 1)
    }

    @Test func addressesPrintCanonically() {
        #expect(IPAddress("2001:db8:0:0:1:0:0:1")?.description == "2001:db8::1:0:0:1")
        #expect(IPAddress("::1")?.description == "::1")
        #expect(IPAddress("2001:db8::")?.description == "2001:db8::")
        #expect(IPAddress("198.51.100.7")?.description == "198.51.100.7")
        #expect(IPAddress("256.0.0.1") == nil)
        #expect(IPAddress("1:2:3") == nil)
    }
}
