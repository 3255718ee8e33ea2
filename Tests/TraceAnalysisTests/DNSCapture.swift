import Capture
import Foundation

/// Builds small DNS captures for the trace tests: queries and responses as raw IPv4/UDP (or TCP)
/// frames written through libpcap, every timestamp chosen by the test.
struct DNSCapture {
    var frames: [(time: Int64, bytes: [UInt8])] = []
    let client = "198.18.0.2"

    static func be16(_ v: Int) -> [UInt8] { [UInt8((v >> 8) & 0xff), UInt8(v & 0xff)] }

    static func v4(_ s: String) -> [UInt8] { s.split(separator: ".").map { UInt8($0) ?? 0 } }

    /// A DNS message with one question (RFC 1035 section 4.1).
    static func message(id: Int, response: Bool, name: String, type: Int = 16, rcode: Int = 0, truncated: Bool = false,
                        answerBytes: Int = 0) -> [UInt8] {
        var flags = response ? 0x8180 : 0x0100
        flags |= rcode
        if truncated { flags |= 0x0200 }
        var m = be16(id) + be16(flags) + be16(1) + be16(0) + be16(0) + be16(0)
        for label in name.split(separator: ".") { m += [UInt8(label.utf8.count)] + Array(label.utf8) }
        m += [0] + be16(type) + be16(1)
        return m + [UInt8](repeating: 0, count: answerBytes)
    }

    static func ipv4UDP(source: String, sport: Int, destination: String, dport: Int, _ payload: [UInt8]) -> [UInt8] {
        let udp = be16(sport) + be16(dport) + be16(8 + payload.count) + [0, 0] + payload
        return [0x45, 0] + be16(20 + udp.count) + [0, 1, 0x40, 0, 64, 17, 0, 0] + v4(source) + v4(destination) + udp
    }

    static func ipv4TCP(source: String, sport: Int, destination: String, dport: Int, seq: UInt32, flags: UInt8, _ payload: [UInt8]) -> [UInt8] {
        let s = [UInt8(seq >> 24), UInt8((seq >> 16) & 0xff), UInt8((seq >> 8) & 0xff), UInt8(seq & 0xff)]
        let tcp = be16(sport) + be16(dport) + s + [0, 0, 0, 0, 0x50, flags] + be16(65535) + [0, 0, 0, 0] + payload
        return [0x45, 0] + be16(20 + tcp.count) + [0, 1, 0x40, 0, 64, 6, 0, 0] + v4(source) + v4(destination) + tcp
    }

    mutating func query(at ms: Double, id: Int, name: String, resolver: String = "198.18.0.1", port: Int = 40000, type: Int = 16) {
        frames.append((Int64(ms * 1e6) + Self.epoch,
                       Self.ipv4UDP(source: client, sport: port, destination: resolver, dport: 53,
                                    Self.message(id: id, response: false, name: name, type: type))))
    }

    mutating func response(at ms: Double, id: Int, name: String, resolver: String = "198.18.0.1", port: Int = 40000,
                           type: Int = 16, rcode: Int = 0, truncated: Bool = false) {
        frames.append((Int64(ms * 1e6) + Self.epoch,
                       Self.ipv4UDP(source: resolver, sport: 53, destination: client, dport: port,
                                    Self.message(id: id, response: true, name: name, type: type, rcode: rcode,
                                                 truncated: truncated, answerBytes: 40))))
    }

    mutating func raw(at ms: Double, _ bytes: [UInt8]) {
        frames.append((Int64(ms * 1e6) + Self.epoch, bytes))
    }

    /// 2026-11-21 00:00:00 UTC, so timestamps look like a real capture's.
    static let epoch: Int64 = 1_795_219_200 * 1_000_000_000

    /// Writes the frames as a pcap of link type RAW and returns its path (removed by the caller).
    func write(nanosecond: Bool = true) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("tp-trace-\(UUID().uuidString).pcap").path
        let writer = try PcapWriter(path: path, linkType: .raw, nanosecond: nanosecond)
        for f in frames { writer.write(f.bytes, timestampNanos: f.time) }
        writer.close()
        return path
    }
}
