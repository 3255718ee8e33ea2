/// Writes the IPv4 and UDP headers of a datagram whose payload already sits right after them: the
/// packet-socket send path builds each probe's frame itself instead of the kernel's UDP stack.
/// Both checksums are computed (the UDP one is optional in RFC 768, but a zero one is dropped by
/// enough middleboxes to lose answers).
public struct IPv4UDPFramer: Sendable, Hashable {
    /// IPv4 header (no options, RFC 791 section 3.1) and UDP header (RFC 768) in bytes.
    public static let headerLength = 28
    /// Source address and port, host byte order.
    public var source: UInt32
    public var sourcePort: UInt16
    public var ttl: UInt8

    public init(source: UInt32, sourcePort: UInt16, ttl: UInt8 = 64) {
        self.source = source
        self.sourcePort = sourcePort
        self.ttl = ttl
    }

    /// Writes the 28 header bytes at `frame` for a payload of `payloadLength` bytes at
    /// `frame + 28`, to `destination`:`port` (host byte order). Returns the frame's length, nil when
    /// the datagram would not fit an IPv4 total length.
    public func write(into frame: UnsafeMutableRawPointer, destination: UInt32, port: UInt16, payloadLength: Int) -> Int? {
        let total = Self.headerLength + payloadLength
        guard payloadLength >= 0, total <= Int(UInt16.max) else { return nil }
        let ip = frame
        ip.storeBytes(of: 0x45, toByteOffset: 0, as: UInt8.self)           // version 4, 5 words
        ip.storeBytes(of: 0, toByteOffset: 1, as: UInt8.self)              // DSCP/ECN
        Self.store(UInt16(total), at: ip, 2)
        // Identification 0 with DF set: an atomic datagram (RFC 6864 section 4.1), as the kernel
        // sends one with path MTU discovery on.
        Self.store(0, at: ip, 4)
        Self.store(0x4000, at: ip, 6)
        ip.storeBytes(of: ttl, toByteOffset: 8, as: UInt8.self)
        ip.storeBytes(of: 17, toByteOffset: 9, as: UInt8.self)             // UDP
        Self.store(0, at: ip, 10)
        Self.store(UInt16(truncatingIfNeeded: source >> 16), at: ip, 12)
        Self.store(UInt16(truncatingIfNeeded: source), at: ip, 14)
        Self.store(UInt16(truncatingIfNeeded: destination >> 16), at: ip, 16)
        Self.store(UInt16(truncatingIfNeeded: destination), at: ip, 18)
        Self.store(Self.checksum(UnsafeRawBufferPointer(start: ip, count: 20)), at: ip, 10)
        let udp = frame + 20
        let udpLength = UInt16(8 + payloadLength)
        Self.store(sourcePort, at: udp, 0)
        Self.store(port, at: udp, 2)
        Self.store(udpLength, at: udp, 4)
        Self.store(0, at: udp, 6)
        // RFC 768: the sum covers a pseudo-header (source, destination, zero, protocol, UDP length);
        // a computed 0 is sent as all ones.
        let pseudo = UInt32(source >> 16) + UInt32(source & 0xFFFF) + UInt32(destination >> 16)
            + UInt32(destination & 0xFFFF) + 17 + UInt32(udpLength)
        let sum = Self.checksum(UnsafeRawBufferPointer(start: udp, count: Int(udpLength)), initial: pseudo)
        Self.store(sum == 0 ? 0xFFFF : sum, at: udp, 6)
        return total
    }

    /// The Internet checksum (RFC 1071): the ones' complement of the ones' complement sum of the
    /// 16-bit big-endian words of `bytes` (an odd last byte padded with zero), plus `initial`.
    /// Summed two words (four bytes) per step into 64 bits and folded at the end (RFC 1071 2(C):
    /// a wider sum folds to the same 16-bit one): the packet path sums every probe's datagram.
    public static func checksum(_ bytes: UnsafeRawBufferPointer, initial: UInt32 = 0) -> UInt16 {
        var sum: UInt64 = 0
        var i = 0
        let n = bytes.count
        while i + 4 <= n {
            sum &+= UInt64(UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: i, as: UInt32.self)))
            i += 4
        }
        if i + 2 <= n {
            sum &+= UInt64(bytes[i]) << 8 | UInt64(bytes[i + 1])
            i += 2
        }
        if i < n { sum &+= UInt64(bytes[i]) << 8 }
        sum &+= UInt64(initial)
        while sum >> 16 != 0 { sum = (sum & 0xFFFF) + (sum >> 16) }
        return ~UInt16(truncatingIfNeeded: sum)
    }

    private static func store(_ value: UInt16, at base: UnsafeMutableRawPointer, _ offset: Int) {
        base.storeBytes(of: value.bigEndian, toByteOffset: offset, as: UInt16.self)
    }
}
