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
