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
