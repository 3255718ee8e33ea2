/// One MasterDnsVPN frame (Go edition, commit bc69a58): a header whose fields depend on the packet
/// type, then the payload (internal/vpnproto/builder.go BuildRaw, parser.go parseFrom and
/// buildPacketFlags). Only the four MTU-test types are modelled: the requests a client sends before
/// any session, and the server's replies.
public struct MasterDnsVPNFrame: Sendable, Equatable {
    public enum PacketType: UInt8, Sendable {
        case mtuUpRequest = 0x01, mtuUpReply = 0x02, mtuDownRequest = 0x03, mtuDownReply = 0x04

        /// MTU_UP_REQ and MTU_DOWN_RES carry stream id, sequence, fragment id and count, and the
        /// compression type; MTU_UP_RES and MTU_DOWN_REQ only session id, type, cookie and check byte.
        var hasExtensions: Bool { self == .mtuUpRequest || self == .mtuDownReply }
        public var headerLength: Int { hasExtensions ? 11 : 4 }
    }

    public var sessionID: UInt8
    public var type: PacketType
    public var streamID: UInt16 = 0
    public var sequence: UInt16 = 0
    public var fragmentID: UInt8 = 0
    public var fragmentCount: UInt8 = 0
    public var compression: UInt8 = 0
    public var cookie: UInt8 = 0
    public var payload: [UInt8]

    public init(sessionID: UInt8, type: PacketType, payload: [UInt8]) {
        self.sessionID = sessionID
        self.type = type
        self.payload = payload
    }

    public var bytes: [UInt8] {
        var header: [UInt8] = [sessionID, type.rawValue]
        if type.hasExtensions {
            header += [UInt8(streamID >> 8), UInt8(truncatingIfNeeded: streamID),
                       UInt8(sequence >> 8), UInt8(truncatingIfNeeded: sequence),
                       fragmentID, fragmentCount, compression]
        }
        header.append(cookie)
        header.append(Self.checkByte(header))
        return header + payload
    }

    /// The header's last byte, over everything before it (parser.go computeHeaderCheckByte): a
    /// checksum, not a MAC; anyone can compute it.
    static func checkByte(_ header: [UInt8]) -> UInt8 {
        var acc = UInt8(truncatingIfNeeded: header.count * 17 + 0x5D)
        for (index, value) in header.enumerated() {
            acc = acc &+ value &+ UInt8(truncatingIfNeeded: index)
            acc ^= value << UInt8(index & 0x03)
        }
        return acc
    }

    public enum ParseError: Error, Equatable, Sendable {
        case tooShort(Int)
        /// A packet type other than the four MTU-test types.
        case unexpectedType(UInt8)
        case badCheckByte
    }

    /// Parses a frame from untrusted bytes: a value or a typed error, never a trap.
    public init(parsing data: some Collection<UInt8>) throws(ParseError) {
        let b = Array(data)
        guard b.count >= 4 else { throw .tooShort(b.count) }
        guard let type = PacketType(rawValue: b[1]) else { throw .unexpectedType(b[1]) }
        let length = type.headerLength
        guard b.count >= length else { throw .tooShort(b.count) }
        guard Self.checkByte(Array(b[..<(length - 1)])) == b[length - 1] else { throw .badCheckByte }
        sessionID = b[0]
        self.type = type
        if type.hasExtensions {
            streamID = UInt16(b[2]) << 8 | UInt16(b[3])
            sequence = UInt16(b[4]) << 8 | UInt16(b[5])
            fragmentID = b[6]
            fragmentCount = b[7]
            compression = b[8]
        }
        cookie = b[length - 2]
        payload = Array(b[length...])
    }
}
