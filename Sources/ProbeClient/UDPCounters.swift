import Foundation

/// The kernel's UDP counters of this network namespace (`/proc/net/snmp`, "Udp:" lines).
///
/// `path` reads them before and after a run: receive-buffer errors mean datagrams were dropped on this
/// host before the client read them, which would otherwise pass for downstream loss.
public struct UDPCounters: Sendable, Hashable {
    public var inErrors: Int
    public var receiveBufferErrors: Int

    public init(inErrors: Int, receiveBufferErrors: Int) {
        self.inErrors = inErrors
        self.receiveBufferErrors = receiveBufferErrors
    }

    /// Nil when the file is missing or does not have the expected shape.
    public static func read(path: String = "/proc/net/snmp") -> UDPCounters? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        return parse(text)
    }

    public static func parse(_ text: String) -> UDPCounters? {
        let lines = text.split(separator: "\n").filter { $0.hasPrefix("Udp: ") }
        guard lines.count >= 2 else { return nil }
        let names = lines[0].split(separator: " ").dropFirst().map(String.init)
        let values = lines[1].split(separator: " ").dropFirst().map { Int($0) }
        guard names.count == values.count else { return nil }
        let table = Dictionary(zip(names, values), uniquingKeysWith: { a, _ in a })
        guard let inErrors = table["InErrors"] ?? nil, let rcvbuf = table["RcvbufErrors"] ?? nil else { return nil }
        return UDPCounters(inErrors: inErrors, receiveBufferErrors: rcvbuf)
    }
}

extension UDPCounters {
    /// Datagrams the kernel dropped for the UDP socket bound to local `port` (the `drops` column of
    /// `/proc/net/udp` and `/proc/net/udp6`), or nil when no such socket is listed.
    public static func socketDrops(port: Int, tables: [String] = ["/proc/net/udp", "/proc/net/udp6"]) -> Int? {
        var found: Int?
        for path in tables {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { continue }
            if let drops = socketDrops(port: port, table: text) { found = (found ?? 0) + drops }
        }
        return found
    }

    static func socketDrops(port: Int, table: String) -> Int? {
        var found: Int?
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ref pointer drops
            guard fields.count >= 13, let colon = fields[1].lastIndex(of: ":"),
                  let local = Int(fields[1][fields[1].index(after: colon)...], radix: 16), local == port,
                  let drops = Int(fields[fields.count - 1]) else { continue }
            found = (found ?? 0) + drops
        }
        return found
    }
}
