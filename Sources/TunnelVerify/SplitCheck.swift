import Foundation
import Glibc
public import Reports

/// The split-tunnel check: with the engine up and the split's routes applied, one small UDP
/// datagram goes to a destination on each side of the split while both the uplink and the TUN
/// are captured. A tunnelled destination on the uplink in clear, or a direct destination inside
/// the TUN, is a misrouted packet and is named.
enum SplitCheck {
    /// `a.b.c.d/len` as (network, mask); `nil` for anything else.
    static func parse(_ prefix: String) -> (network: UInt32, mask: UInt32)? {
        let parts = prefix.split(separator: "/")
        guard parts.count == 2, let bytes = IPAddress.v4Bytes(String(parts[0])), let length = Int(parts[1]), (0...32).contains(length) else { return nil }
        let value = bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let mask: UInt32 = length == 0 ? 0 : ~UInt32(0) << (32 - length)
        return (value & mask, mask)
    }

    static func contains(_ prefixes: [String], _ address: String) -> Bool {
        guard let bytes = IPAddress.v4Bytes(address) else { return false }
        let value = bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return prefixes.compactMap(parse).contains { value & $0.mask == $0.network }
    }

    /// Whether the declared split sends `address` through the tunnel.
    static func isTunnelled(_ split: Profile.Split, _ address: String) -> Bool {
        let inside = contains(split.prefixes, address)
        return split.mode == .include ? inside : !inside
    }

    static func text(_ value: UInt32) -> String {
        "\(value >> 24).\(value >> 16 & 0xff).\(value >> 8 & 0xff).\(value & 0xff)"
    }

    /// One destination on each side: the first host of each prefix, and a documentation address
    /// (RFC 5737) outside them.
    static func targets(_ split: Profile.Split) -> (tunnelled: [String], direct: [String]) {
        let hosts = split.prefixes.compactMap(parse).map { text($0.mask == ~UInt32(0) ? $0.network : $0.network + 1) }
        let outside = ["203.0.113.1", "192.0.2.1", "198.51.100.1"].first { !contains(split.prefixes, $0) } ?? "203.0.113.1"
        return split.mode == .include ? (hosts, [outside]) : ([outside], hosts)
    }

    /// A few UDP datagrams to port 9 (discard, RFC 863) from inside the sandbox.
    static func send(to addresses: [String], namespacePath: String) async {
        _ = try? await NamespaceThread.run(in: namespacePath) { () -> Bool in
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            guard fd >= 0 else { return false }
            defer { close(fd) }
            let payload = Array("tunnelprobe split check".utf8)
            for address in addresses {
                guard let bytes = IPAddress.v4Bytes(address) else { continue }
                var target = sockaddr_in()
                target.sin_family = sa_family_t(AF_INET)
                target.sin_port = in_port_t(9).bigEndian
                target.sin_addr.s_addr = bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
                for _ in 0..<3 {
                    _ = withUnsafePointer(to: &target) { pointer in
                        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                            payload.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT), address, socklen_t(MemoryLayout<sockaddr_in>.size)) }
                        }
                    }
                }
            }
            return true
        }
    }

    /// A TUN frame (raw IP) with an Ethernet header in front, for the uplink decoder.
    static func ethernet(_ raw: [UInt8]) -> [UInt8] {
        guard let first = raw.first else { return raw }
        let type: [UInt8] = first >> 4 == 6 ? [0x86, 0xdd] : [0x08, 0x00]
        return [UInt8](repeating: 0, count: 12) + type + raw
    }

    /// The verdict from both captures.
    static func judge(split: Profile.Split, targets: (tunnelled: [String], direct: [String]), uplink: [UplinkPacket],
                      tun: [UplinkPacket]) -> ResilienceReport.Split {
        let clear = uplink.filter { packet in
            packet.kind != .carrier && packet.kind != .linkControl && packet.family == 4
                && packet.destination.map { isTunnelled(split, $0) } == true
        }
        let inside = tun.filter { packet in packet.family == 4 && packet.destination.map { !isTunnelled(split, $0) } == true }
        let seenTunnelled = targets.tunnelled.allSatisfy { target in tun.contains { $0.destination == target } }
        let seenDirect = targets.direct.allSatisfy { target in uplink.contains { $0.destination == target } }
        return ResilienceReport.Split(mode: split.mode.rawValue, prefixes: split.prefixes, tunnelledProbes: targets.tunnelled,
                                      directProbes: targets.direct, clearOnUplink: clear, insideTunnel: inside,
                                      ok: clear.isEmpty && inside.isEmpty && seenTunnelled && seenDirect)
    }
}
