import Base

/// Decodes captured frames down to UDP/TCP: link header (Ethernet with 802.1Q/802.1ad tags and PPPoE
/// sessions, Linux cooked v1/v2, NULL/LOOP, PPP, raw IP), IPv4 (RFC 791) and IPv6 (RFC 8200) with
/// fragment reassembly, UDP (RFC 768) and TCP (RFC 9293) headers. Every read is bounds-checked; a frame
/// that does not decode is counted by reason in `undecoded` and never stops the caller.
///
/// A UDP datagram that the capture's snap length cut still decodes when its UDP header was captured:
/// the header says so (`PacketHeader.missingBytes`) and the payload is what was captured.
public struct PacketDecoder: Sendable {
    public let linkType: LinkType
    /// Frames that yielded a UDP or TCP payload (a reassembled datagram counts once).
    public private(set) var decoded = 0
    /// Frames that did not, by reason. Fragments held for reassembly are in neither until they
    /// complete or are given up on (`finish()`).
    public private(set) var undecoded = UndecodedCounts()
    private var reassembler = FragmentReassembler()

    public init(linkType: LinkType) {
        self.linkType = linkType
    }

    /// Decodes one frame. `body` sees the header and the transport payload (valid only during the call)
    /// when the frame, or the datagram it completed, decodes. Returns whether `body` was called.
    @discardableResult
    public mutating func decode(
        _ frame: UnsafeRawBufferPointer, wireLength: Int, timestampNanos: Int64,
        _ body: (PacketHeader, UnsafeRawBufferPointer) -> Void
    ) -> Bool {
        decode(frame, linkType: linkType, wireLength: wireLength, timestampNanos: timestampNanos, body)
    }

    /// Decodes one frame of the given link type (a pcapng's interfaces may each have their own).
    @discardableResult
    public mutating func decode(
        _ frame: UnsafeRawBufferPointer, linkType: LinkType, wireLength: Int, timestampNanos: Int64,
        _ body: (PacketHeader, UnsafeRawBufferPointer) -> Void
    ) -> Bool {
        let network: (version: Int, offset: Int)
        switch Self.linkNetwork(frame, linkType) {
        case .success(let n): network = n
        case .failure(let reason):
            undecoded[reason] += 1
            return false
        }
        let snapCut = frame.count < wireLength
        let result = network.version == 4
            ? decodeIPv4(frame, at: network.offset, snapCut: snapCut, wireLength: wireLength, time: timestampNanos, body)
            : decodeIPv6(frame, at: network.offset, snapCut: snapCut, wireLength: wireLength, time: timestampNanos, body)
        switch result {
        case .decoded:
            decoded += 1
            return true
        case .held:
            return false
        case .undecoded(let reason):
            undecoded[reason] += 1
            return false
        }
    }

    /// Decodes one frame into an owned `DecodedPacket` (copies the payload).
    public mutating func decodePacket(
        _ frame: UnsafeRawBufferPointer, linkType: LinkType? = nil, wireLength: Int, timestampNanos: Int64
    ) -> DecodedPacket? {
        var packet: DecodedPacket?
        decode(frame, linkType: linkType ?? self.linkType, wireLength: wireLength, timestampNanos: timestampNanos) { header, payload in
            packet = DecodedPacket(header: header, payload: Array(payload))
        }
        return packet
    }

    /// Ends the capture: fragments still waiting for the rest of their datagram count as unreassembled.
    public mutating func finish() {
        undecoded[.fragmentUnreassembled] += reassembler.drain()
    }

    // MARK: - Link layer

    private enum LinkStep {
        case success((version: Int, offset: Int))
        case failure(UndecodedReason)
    }

    private enum Step {
        case decoded
        case held
        case undecoded(UndecodedReason)
    }

    private static func linkNetwork(_ f: UnsafeRawBufferPointer, _ linkType: LinkType) -> LinkStep {
        switch linkType {
        case .ethernet:
            guard f.count >= 14 else { return .failure(.linkTruncated) }
            var type = f.be16(12)
            var offset = 14
            // IEEE 802.1Q (0x8100), 802.1ad (0x88a8) and the old QinQ 0x9100: 4 bytes each.
            while type == 0x8100 || type == 0x88a8 || type == 0x9100 {
                guard f.count >= offset + 4 else { return .failure(.linkTruncated) }
                type = f.be16(offset + 2)
                offset += 4
            }
            if type == 0x8864 { return pppoeSession(f, offset) }
            return Self.etherType(type, offset)
        case .pppoe:
            return pppoeSession(f, 0)
        case .ppp:
            // DLT_PPP: the RFC 1661 protocol field, after the RFC 1662 address and control bytes when present.
            guard f.count >= 2 else { return .failure(.linkTruncated) }
            return ppp(f, f[0] == 0xff && f[1] == 0x03 ? 2 : 0)
        case .pppSerial:
            // PPP in HDLC-like framing (RFC 1662), or Cisco HDLC (address 0x0f/0x8f, an ethertype).
            guard f.count >= 4 else { return .failure(.linkTruncated) }
            if f[0] == 0x0f || f[0] == 0x8f { return Self.etherType(f.be16(2), 4) }
            return ppp(f, f[0] == 0xff && f[1] == 0x03 ? 2 : 0)
        case .linuxSLL:
            guard f.count >= 16 else { return .failure(.linkTruncated) }
            return Self.etherType(f.be16(14), 16)
        case .linuxSLL2:
            guard f.count >= 20 else { return .failure(.linkTruncated) }
            return Self.etherType(f.be16(0), 20)
        case .null, .loop:
            guard f.count >= 4 else { return .failure(.linkTruncated) }
            let big = f.be32(0)
            // NULL stores the family in the capturing host's byte order: accept either.
            let family = linkType == .loop || big < 0x100 ? big : big.byteSwapped
            switch family {
            case 2: return .success((4, 4))
            case 10, 24, 28, 30: return .success((6, 4))  // AF_INET6 on Linux, Net/OpenBSD, FreeBSD, Darwin
            default: return .failure(.notIP)
            }
        case .raw:
            guard f.count >= 1 else { return .failure(.linkTruncated) }
            switch f[0] >> 4 {
            case 4: return .success((4, 0))
            case 6: return .success((6, 0))
            default: return .failure(.ipMalformed)
            }
        case .ipv4: return .success((4, 0))
        case .ipv6: return .success((6, 0))
        case .other: return .failure(.unsupportedLinkType)
        }
    }

    /// A PPPoE session frame (RFC 2516 section 4: version/type 0x11, code 0, session id, length) and the
    /// PPP protocol after it.
    private static func pppoeSession(_ f: UnsafeRawBufferPointer, _ offset: Int) -> LinkStep {
        guard f.count >= offset + 8 else { return .failure(.linkTruncated) }
        guard f[offset] == 0x11, f[offset + 1] == 0 else { return .failure(.notIP) }  // discovery or another version
        return ppp(f, offset + 6)
    }

    /// The PPP protocol field (RFC 1661 section 2), two bytes or one when compressed (RFC 1661 section
    /// 6.5: an odd first byte): 0x0021 IPv4, 0x0057 IPv6 (RFC 5072).
    private static func ppp(_ f: UnsafeRawBufferPointer, _ offset: Int) -> LinkStep {
        guard f.count > offset else { return .failure(.linkTruncated) }
        let proto: UInt16, header: Int
        if f[offset] & 1 == 1 {
            (proto, header) = (UInt16(f[offset]), 1)
        } else {
            guard f.count >= offset + 2 else { return .failure(.linkTruncated) }
            (proto, header) = (f.be16(offset), 2)
        }
        switch proto {
        case 0x0021: return .success((4, offset + header))
        case 0x0057: return .success((6, offset + header))
        default: return .failure(.notIP)
        }
    }

    private static func etherType(_ type: UInt16, _ offset: Int) -> LinkStep {
        switch type {
        case 0x0800: .success((4, offset))
        case 0x86dd: .success((6, offset))
        default: .failure(.notIP)
        }
    }

    // MARK: - IP

    private mutating func decodeIPv4(
        _ f: UnsafeRawBufferPointer, at o: Int, snapCut: Bool, wireLength: Int, time: Int64,
        _ body: (PacketHeader, UnsafeRawBufferPointer) -> Void
    ) -> Step {
        guard f.count >= o + 20 else { return .undecoded(snapCut ? .snapTruncated : .ipTruncated) }
        guard f[o] >> 4 == 4 else { return .undecoded(.ipMalformed) }
        let headerLength = Int(f[o] & 0x0f) * 4
        var totalLength = Int(f.be16(o + 2))
        // A zero total length is what segmentation offload leaves on outgoing packets: use the frame.
        if totalLength == 0 { totalLength = f.count - o }
        guard headerLength >= 20, totalLength >= headerLength else { return .undecoded(.ipMalformed) }
        let proto = f[o + 9]
        let flagsOffset = f.be16(o + 6)
        let moreFragments = flagsOffset & 0x2000 != 0
        let fragmentOffset = Int(flagsOffset & 0x1fff) * 8
        // What the snap length cut off. Only a whole UDP datagram's header is enough to go on with: a cut
        // fragment or TCP segment would corrupt what is rebuilt from it.
        let missing = max(0, o + totalLength - f.count)
        if missing > 0 {
            guard snapCut else { return .undecoded(.ipTruncated) }
            guard proto == 17, !moreFragments, fragmentOffset == 0, f.count >= o + headerLength + 8 else {
                return .undecoded(.snapTruncated)
            }
        }
        let source = IPAddress.v4(f.be32(o + 12))
        let destination = IPAddress.v4(f.be32(o + 16))
        let data = UnsafeRawBufferPointer(rebasing: f[(o + headerLength)..<(o + totalLength - missing)])
        if moreFragments || fragmentOffset > 0 {
            let key = FragmentReassembler.Key(
                source: source, destination: destination, identification: UInt32(f.be16(o + 4)), proto: proto)
            return reassemble(key: key, offset: fragmentOffset, more: moreFragments, data: data, headerLength: headerLength,
                              wireLength: wireLength, time: time, body)
        }
        return transport(proto: proto, data, source: source, destination: destination, ipLength: totalLength,
                         wireLength: wireLength, time: time, reassembled: false, missing: missing, body)
    }

    private mutating func decodeIPv6(
        _ f: UnsafeRawBufferPointer, at o: Int, snapCut: Bool, wireLength: Int, time: Int64,
        _ body: (PacketHeader, UnsafeRawBufferPointer) -> Void
    ) -> Step {
        guard f.count >= o + 40 else { return .undecoded(snapCut ? .snapTruncated : .ipTruncated) }
        guard f[o] >> 4 == 6 else { return .undecoded(.ipMalformed) }
        var payloadLength = Int(f.be16(o + 4))
        if payloadLength == 0 { payloadLength = f.count - o - 40 }  // jumbogram or offload
        let missing = max(0, o + 40 + payloadLength - f.count)
        if missing > 0, !snapCut { return .undecoded(.ipTruncated) }
        let source = IPAddress.v6(f.be64(o + 8), f.be64(o + 16))
        let destination = IPAddress.v6(f.be64(o + 24), f.be64(o + 32))
        // With a snap cut, the headers are walked in what was captured (`end`); see decodeIPv4.
        let end = o + 40 + payloadLength - missing, ipLength = 40 + payloadLength
        var next = f[o + 6]
        var cursor = o + 40
        // RFC 8200 section 4: walk the extension headers up to the transport header.
        while true {
            switch next {
            case 0, 43, 60:  // hop-by-hop, routing, destination options: (length + 1) * 8 bytes
                guard end >= cursor + 8 else { return .undecoded(missing > 0 ? .snapTruncated : .ipMalformed) }
                let length = (Int(f[cursor + 1]) + 1) * 8
                guard end >= cursor + length else { return .undecoded(missing > 0 ? .snapTruncated : .ipMalformed) }
                next = f[cursor]
                cursor += length
            case 44:  // fragment header, RFC 8200 section 4.5
                guard missing == 0 else { return .undecoded(.snapTruncated) }
                guard end >= cursor + 8 else { return .undecoded(.ipMalformed) }
                let proto = f[cursor]
                let offsetFlags = f.be16(cursor + 2)
                let key = FragmentReassembler.Key(
                    source: source, destination: destination, identification: f.be32(cursor + 4), proto: proto)
                let data = UnsafeRawBufferPointer(rebasing: f[(cursor + 8)..<end])
                let offset = Int(offsetFlags & 0xfff8), more = offsetFlags & 1 != 0
                if offset == 0 && !more {  // an atomic fragment (RFC 6946): the datagram is whole
                    return transport(proto: proto, data, source: source, destination: destination,
                                     ipLength: end - o, wireLength: wireLength, time: time, reassembled: false, missing: 0, body)
                }
                return reassemble(key: key, offset: offset, more: more, data: data, headerLength: cursor + 8 - o,
                                  wireLength: wireLength, time: time, body)
            case 6, 17:
                if missing > 0, next == 6 || end < cursor + 8 { return .undecoded(.snapTruncated) }
                return transport(proto: next, UnsafeRawBufferPointer(rebasing: f[cursor..<end]), source: source,
                                 destination: destination, ipLength: ipLength, wireLength: wireLength, time: time,
                                 reassembled: false, missing: missing, body)
            case 51:  // authentication header, RFC 4302: (length + 2) * 4 bytes
                guard end >= cursor + 8 else { return .undecoded(missing > 0 ? .snapTruncated : .ipMalformed) }
                let length = (Int(f[cursor + 1]) + 2) * 4
                guard end >= cursor + length else { return .undecoded(missing > 0 ? .snapTruncated : .ipMalformed) }
                next = f[cursor]
                cursor += length
            case 58:
                return .undecoded(.otherTransport)  // ICMPv6
            default:
                return .undecoded(.ipv6ExtensionUnsupported)
            }
        }
    }

    private mutating func reassemble(
        key: FragmentReassembler.Key, offset: Int, more: Bool, data: UnsafeRawBufferPointer, headerLength: Int,
        wireLength: Int, time: Int64, _ body: (PacketHeader, UnsafeRawBufferPointer) -> Void
    ) -> Step {
        var dropped = 0
        let outcome = reassembler.add(key: key, offset: offset, moreFragments: more, data: data, now: time, dropped: &dropped)
        undecoded[.fragmentUnreassembled] += dropped
        switch outcome {
        case .held:
            return .held
        case .rejected:
            return .undecoded(.fragmentUnreassembled)
        case .complete(let datagram):
            return datagram.withUnsafeBytes { bytes in
                transport(proto: key.proto, bytes, source: key.source, destination: key.destination,
                          ipLength: headerLength + datagram.count, wireLength: wireLength, time: time,
                          reassembled: true, missing: 0, body)
            }
        }
    }

    // MARK: - Transport

    private func transport(
        proto: UInt8, _ d: UnsafeRawBufferPointer, source: IPAddress, destination: IPAddress, ipLength: Int,
        wireLength: Int, time: Int64, reassembled: Bool, missing: Int,
        _ body: (PacketHeader, UnsafeRawBufferPointer) -> Void
    ) -> Step {
        switch proto {
        case 17:
            guard d.count >= 8 else { return .undecoded(.transportMalformed) }
            let length = Int(d.be16(4))
            // RFC 768: the length covers header and data; a zero length is only legal in IPv6 jumbograms.
            let end = length == 0 ? d.count + missing : length
            guard end >= 8, end <= d.count + missing else { return .undecoded(.transportMalformed) }
            let captured = min(end, d.count)
            let header = PacketHeader(
                timestampNanos: time, source: source, destination: destination, transport: .udp,
                sourcePort: d.be16(0), destinationPort: d.be16(2), ipLength: ipLength, wireLength: wireLength,
                reassembled: reassembled, missingBytes: end - captured)
            body(header, UnsafeRawBufferPointer(rebasing: d[8..<captured]))
            return .decoded
        case 6:
            guard d.count >= 20 else { return .undecoded(.transportMalformed) }
            let dataOffset = Int(d[12] >> 4) * 4
            guard dataOffset >= 20, dataOffset <= d.count else { return .undecoded(.transportMalformed) }
            let header = PacketHeader(
                timestampNanos: time, source: source, destination: destination, transport: .tcp,
                sourcePort: d.be16(0), destinationPort: d.be16(2), ipLength: ipLength, wireLength: wireLength,
                tcpSequence: d.be32(4), tcpFlags: d[13], reassembled: reassembled)
            body(header, UnsafeRawBufferPointer(rebasing: d[dataOffset...]))
            return .decoded
        default:
            return .undecoded(.otherTransport)
        }
    }
}

extension UnsafeRawBufferPointer {
    /// Big-endian reads; callers have checked the bounds.
    @inline(__always) func be16(_ offset: Int) -> UInt16 {
        UInt16(self[offset]) << 8 | UInt16(self[offset + 1])
    }

    @inline(__always) func be32(_ offset: Int) -> UInt32 {
        UInt32(be16(offset)) << 16 | UInt32(be16(offset + 2))
    }

    @inline(__always) func be64(_ offset: Int) -> UInt64 {
        UInt64(be32(offset)) << 32 | UInt64(be32(offset + 4))
    }
}
