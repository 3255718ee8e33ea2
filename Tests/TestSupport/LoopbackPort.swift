#if canImport(Glibc)
import Glibc
#endif

/// Loopback ports for tests that need one nobody listens on.
public enum LoopbackPort {
    /// A loopback port nobody listens on: the kernel picks a free UDP port, which is then closed;
    /// the same port must also be free for TCP. (Another process may still take it before the
    /// caller does: `startServe` tries again then.)
    public static func unused() -> Int {
        for _ in 0..<32 {
            let udp = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            let tcp = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(udp); close(tcp) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                    bind(udp, sa, length) == 0 && getsockname(udp, sa, &length) == 0 && bind(tcp, sa, length) == 0
                }
            }
            if bound { return Int(UInt16(bigEndian: address.sin_port)) }
        }
        return Int.random(in: 40_000...60_000)
    }
}
