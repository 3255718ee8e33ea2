public import Base
public import SystemPackage
public import Glibc

/// An IPv4 or IPv6 address and port as the socket calls take it (`sockaddr_in` / `sockaddr_in6`):
/// the one place a socket address is built by hand.
public struct IPSocketAddress: Sendable {
    private enum Storage: Sendable {
        case v4(sockaddr_in)
        case v6(sockaddr_in6)
    }

    private var storage: Storage

    /// `address` and `port`; no address means the IPv4 wildcard (0.0.0.0), as for a bind to every
    /// local address.
    public init(_ address: IPAddress?, port: Int) {
        let portBytes = UInt16(truncatingIfNeeded: port).bigEndian
        if let address, address.isIPv6 {
            var raw = sockaddr_in6()
            raw.sin6_family = sa_family_t(AF_INET6)
            raw.sin6_port = portBytes
            let bytes = address.bytes
            withUnsafeMutableBytes(of: &raw.sin6_addr) { $0.copyBytes(from: bytes) }
            storage = .v6(raw)
        } else {
            var raw = sockaddr_in()
            raw.sin_family = sa_family_t(AF_INET)
            raw.sin_port = portBytes
            if let address { withUnsafeMutableBytes(of: &raw.sin_addr) { $0.copyBytes(from: address.bytes) } }
            storage = .v4(raw)
        }
    }

    /// An IPv4 address in dotted form (read by `inet_pton`) and a port in 0...65535, or nil.
    public init?(ipv4 text: String, port: Int) {
        guard (0...65535).contains(port) else { return nil }
        var raw = sockaddr_in()
        raw.sin_family = sa_family_t(AF_INET)
        raw.sin_port = UInt16(truncatingIfNeeded: port).bigEndian
        guard inet_pton(AF_INET, text, &raw.sin_addr) == 1 else { return nil }
        storage = .v4(raw)
    }

    /// The address a receive call filled in.
    public init(_ raw: sockaddr_in) { storage = .v4(raw) }

    /// The address in text (`inet_ntop`).
    public var host: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        switch storage {
        case .v4(var raw): inet_ntop(AF_INET, &raw.sin_addr, &text, socklen_t(text.count))
        case .v6(var raw): inet_ntop(AF_INET6, &raw.sin6_addr, &text, socklen_t(text.count))
        }
        return text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    public var port: Int {
        switch storage {
        case .v4(let raw): Int(UInt16(bigEndian: raw.sin_port))
        case .v6(let raw): Int(UInt16(bigEndian: raw.sin6_port))
        }
    }

    /// `AF_INET` or `AF_INET6`, for the `socket` call that goes with this address.
    public var family: Int32 {
        switch storage {
        case .v4: AF_INET
        case .v6: AF_INET6
        }
    }

    /// Calls `body` with the address as a `sockaddr` pointer and its length (bind, connect, sendto).
    public func withSockaddr<T>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws -> T) rethrows -> T {
        switch storage {
        case .v4(var raw):
            return try withUnsafePointer(to: &raw) {
                try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { try body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        case .v6(var raw):
            return try withUnsafePointer(to: &raw) {
                try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { try body($0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        }
    }

    /// SO_RCVBUFFORCE (socket(7)): a receive buffer above net.core.rmem_max, for root.
    public static let receiveBufferForceOption: Int32 = SO_RCVBUFFORCE

    /// Receives one datagram on `fd` (`recvfrom` with `flags`) into `buffer`: its length and the IPv4
    /// address it came from, or the errno (EINTR retried).
    public static func receive(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, flags: Int32) throws(Errno) -> (count: Int, from: IPSocketAddress) {
        var source = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let count = try SystemCall.retryingInterrupts {
            withUnsafeMutablePointer(to: &source) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    recvfrom(fd, buffer.baseAddress, buffer.count, flags, $0, &length)
                }
            }
        }
        return (count, IPSocketAddress(source))
    }
}
