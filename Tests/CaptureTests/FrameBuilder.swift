import Base
@testable import Capture

/// Hand-built frames for decoder and reader tests: every byte spelled out so that a test says exactly
/// what lies on the wire.
enum FrameBuilder {
    static func be16(_ v: Int) -> [UInt8] { [UInt8((v >> 8) & 0xff), UInt8(v & 0xff)] }
    static func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8((v >> 16) & 0xff), UInt8((v >> 8) & 0xff), UInt8(v & 0xff)] }

    static func v4(_ text: String) -> UInt32 {
        guard case .v4(let a)? = IPAddress(text) else { return 0 }
        return a
    }

    static func udp(sourcePort: Int, destinationPort: Int, payload: [UInt8]) -> [UInt8] {
        be16(sourcePort) + be16(destinationPort) + be16(8 + payload.count) + [0, 0] + payload
    }

    static func tcp(sourcePort: Int, destinationPort: Int, sequence: UInt32, flags: UInt8 = 0x18, payload: [UInt8]) -> [UInt8] {
        be16(sourcePort) + be16(destinationPort) + be32(sequence) + be32(0) + [0x50, flags] + be16(65535) + [0, 0, 0, 0] + payload
    }

    /// An IPv4 header (no options) around `transport`; `fragment` gives (offset in bytes, more fragments).
    static func ipv4(source: String, destination: String, proto: UInt8 = 17, id: Int = 1,
                     fragment: (offset: Int, more: Bool)? = nil, _ transport: [UInt8]) -> [UInt8] {
        var flags = 0x4000  // DF
        if let fragment { flags = (fragment.more ? 0x2000 : 0) | (fragment.offset / 8) }
        return [0x45, 0] + be16(20 + transport.count) + be16(id) + be16(flags) + [64, proto, 0, 0]
            + be32(v4(source)) + be32(v4(destination)) + transport
    }

    static func ipv6(source: String, destination: String, next: UInt8 = 17, _ payload: [UInt8]) -> [UInt8] {
        guard case .v6(let sh, let sl)? = IPAddress(source), case .v6(let dh, let dl)? = IPAddress(destination) else { return [] }
        func bytes(_ v: UInt64) -> [UInt8] { (0..<8).map { UInt8((v >> (56 - 8 * UInt64($0))) & 0xff) } }
        return [0x60, 0, 0, 0] + be16(payload.count) + [next, 64] + bytes(sh) + bytes(sl) + bytes(dh) + bytes(dl) + payload
    }

    static func ethernet(vlans: [Int] = [], etherType: Int = 0x0800, _ payload: [UInt8]) -> [UInt8] {
        var frame: [UInt8] = [2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2]
        for vlan in vlans { frame += be16(0x8100) + be16(vlan) }
        return frame + be16(etherType) + payload
    }

    static func linuxSLL(etherType: Int = 0x0800, _ payload: [UInt8]) -> [UInt8] {
        [0, 4, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0] + be16(etherType) + payload
    }

    static func linuxSLL2(etherType: Int = 0x0800, _ payload: [UInt8]) -> [UInt8] {
        be16(etherType) + [0, 0] + be32(2) + [0, 1, 4, 6] + [2, 0, 0, 0, 0, 1, 0, 0] + payload
    }

    /// DLT_NULL stores the family in the writer's byte order: little-endian here, as on x86.
    static func null(family: UInt32 = 2, _ payload: [UInt8]) -> [UInt8] {
        [UInt8(family & 0xff), UInt8((family >> 8) & 0xff), 0, 0] + payload
    }

    static func loop(family: UInt32 = 2, _ payload: [UInt8]) -> [UInt8] { be32(family) + payload }
}
