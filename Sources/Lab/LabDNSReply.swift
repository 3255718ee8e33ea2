/// A reply to a DNS probe sent from inside a lab namespace.
public struct LabDNSReply: Sendable, Hashable {
    /// The address the reply came from; with AnyIP aliases it must equal the address queried.
    public var source: String
    public var sourcePort: Int
    /// The whole message as received.
    public var bytes: [UInt8]
    /// Header TC bit (RFC 1035 section 4.1.1).
    public var truncated: Bool
    public var responseCode: Int
    public var answerCount: Int

    public var size: Int { bytes.count }
}

/// The few bytes of RFC 1035 a readiness probe needs: one question, optionally an OPT record
/// (RFC 6891 section 6.1.2), and the reply header. Full parsing lives in DNSWire.
enum DNSProbeMessage {
    static func query(id: UInt16, name: String, type: UInt16, ednsPayloadSize: Int?) -> [UInt8] {
        var bytes: [UInt8] = []
        func append16(_ value: UInt16) { bytes += [UInt8(value >> 8), UInt8(value & 0xff)] }
        append16(id)
        append16(0x0100)  // RD
        append16(1)
        append16(0)
        append16(0)
        append16(ednsPayloadSize == nil ? 0 : 1)
        for label in name.split(separator: ".") {
            let utf8 = Array(label.utf8.prefix(63))
            bytes.append(UInt8(utf8.count))
            bytes += utf8
        }
        bytes.append(0)
        append16(type)
        append16(1)  // IN
        if let size = ednsPayloadSize {
            bytes.append(0)  // root owner
            append16(41)  // OPT
            append16(UInt16(clamping: size))
            bytes += [0, 0, 0, 0]  // extended RCODE, version, flags
            append16(0)
        }
        return bytes
    }

    /// `nil` unless `bytes` is a response with this id.
    static func reply(_ bytes: [UInt8], id: UInt16, source: String, port: Int) -> LabDNSReply? {
        guard bytes.count >= 12, UInt16(bytes[0]) << 8 | UInt16(bytes[1]) == id, bytes[2] & 0x80 != 0 else { return nil }
        return LabDNSReply(
            source: source,
            sourcePort: port,
            bytes: bytes,
            truncated: bytes[2] & 0x02 != 0,
            responseCode: Int(bytes[3] & 0x0f),
            answerCount: Int(UInt16(bytes[6]) << 8 | UInt16(bytes[7]))
        )
    }
}

/// The UDP sockets of a network namespace as /proc/PID/net/udp lists them.
enum UDPSocketTable {
    /// `true` when a socket is bound to `port` on `address` or on the wildcard. The kernel
    /// prints `local_address` as the address in host byte order in hex (little-endian here),
    /// then `:` and the port in hex.
    static func hasSocket(in table: String, address: String, port: Int) -> Bool {
        let wanted = Set([hexAddress(address), "00000000"].compactMap { $0 })
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count > 1 else { continue }
            let local = fields[1].split(separator: ":")
            guard local.count == 2, Int(local[1], radix: 16) == port else { continue }
            if wanted.contains(String(local[0]).uppercased()) { return true }
        }
        return false
    }

    static func hexAddress(_ address: String) -> String? {
        let octets = address.split(separator: ".", omittingEmptySubsequences: false).compactMap { UInt8($0) }
        guard octets.count == 4 else { return nil }
        let value = octets.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        // The bytes are in network order in memory; the kernel prints them as a host u32.
        let hex = String(UInt32(bigEndian: value), radix: 16, uppercase: true)
        return String(repeating: "0", count: 8 - hex.count) + hex
    }
}
