import CSocketBatch
public import SystemPackage
#if canImport(Glibc)
import Glibc
#endif

/// The IPv6 side of the sweep's batched socket: an explicit IPv6 list is swept over an IPv6 socket
/// whose batches carry `sockaddr_in6` peers (the IPv4 batches keep their own `sockaddr_in` ones).
extension UDPBatchSocket {
    static func openIPv6(bufferBytes: Int32) throws(Errno) -> Int32 {
        let fd = socket(AF_INET6, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw Errno(rawValue: errno) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        var size = bufferBytes
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        // IPv6 only: the IPv4 addresses of a mixed list go out on the IPv4 socket.
        var on: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &on, socklen_t(MemoryLayout<Int32>.size))
        var local = sockaddr_in6()
        local.sin6_family = sa_family_t(AF_INET6)
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
        }
        guard bound == 0 else {
            let code = Errno(rawValue: errno)
            close(fd)
            throw code
        }
        return fd
    }
}

/// The `sockaddr_in6` peers of an IPv6 batch, freed with it.
final class IPv6Names {
    let names: UnsafeMutablePointer<sockaddr_in6>

    init(capacity: Int) {
        names = .allocate(capacity: capacity)
        names.initialize(repeating: sockaddr_in6(), count: capacity)
    }

    deinit { names.deallocate() }
}

extension DatagramBatch {
    /// Makes this (empty) batch one of IPv6 peers, for an IPv6 `UDPBatchSocket`; returns it.
    @discardableResult
    public func useIPv6() -> DatagramBatch {
        let table = IPv6Names(capacity: capacity)
        ipv6Names = table
        for i in 0..<capacity {
            headers[i].msg_hdr.msg_name = UnsafeMutableRawPointer(table.names + i)
            headers[i].msg_hdr.msg_namelen = socklen_t(MemoryLayout<sockaddr_in6>.size)
        }
        count = 0
        return self
    }

    /// Appends a datagram for IPv6 `address` and `port` to an IPv6 batch, as `append(to:port:fill:)`
    /// does for IPv4; false when the batch is full, not IPv6, or `fill` returns nil.
    public func append(to6 address: UInt128, port: UInt16, fill: (UnsafeMutableRawBufferPointer) -> Int?) -> Bool {
        guard count < capacity, let table = ipv6Names else { return false }
        let slot = UnsafeMutableRawBufferPointer(start: data + count * slotSize, count: slotSize)
        guard let length = fill(slot), length > 0, length <= slotSize else { return false }
        iovecs[count].iov_len = length
        var name = sockaddr_in6()
        name.sin6_family = sa_family_t(AF_INET6)
        name.sin6_port = port.bigEndian
        withUnsafeMutableBytes(of: &name.sin6_addr) { raw in
            for i in 0..<16 { raw[i] = UInt8(truncatingIfNeeded: address >> UInt128(8 * (15 - i))) }
        }
        table.names[count] = name
        headers[count].msg_hdr.msg_namelen = socklen_t(MemoryLayout<sockaddr_in6>.size)
        count += 1
        return true
    }

    /// The IPv6 peer of datagram `index` of an IPv6 batch (nil for an IPv4 batch).
    public func peer6(_ index: Int) -> UInt128? {
        guard let table = ipv6Names else { return nil }
        return withUnsafeBytes(of: table.names[index].sin6_addr) { raw in raw.reduce(UInt128(0)) { $0 << 8 | UInt128($1) } }
    }
}
