public import Base
import SystemPackage
#if canImport(Glibc)
import Glibc
#endif

/// The IPv6 side of `PacketInfoSocket`: IPV6_RECVPKTINFO gives each datagram's destination and
/// IPV6_PKTINFO sends the answer from it (ipv6(7), RFC 3542 6.1), with IPV6_FREEBIND so that the
/// source may be any address of a local route rather than one assigned to an interface.
extension PacketInfoSocket {
    /// IPV6_RECVPKTINFO (49), IPV6_PKTINFO (50), IPV6_FREEBIND (78), <linux/in6.h>.
    static let receivePacketInfo6: Int32 = 49
    static let packetInfo6: Int32 = 50
    static let freeBind6: Int32 = 78

    /// An IPv6-only UDP socket bound to [::]:`port` with IPV6_RECVPKTINFO and IPV6_FREEBIND on.
    public static func bind6(port: Int, bufferBytes: Int32) throws(SetupError) -> PacketInfoSocket {
        let fd = socket(AF_INET6, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw .socket(Errno(rawValue: errno)) }
        var on: Int32 = 1
        let length = socklen_t(MemoryLayout<Int32>.size)
        guard setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &on, length) == 0,
              setsockopt(fd, Int32(IPPROTO_IPV6), receivePacketInfo6, &on, length) == 0,
              setsockopt(fd, Int32(IPPROTO_IPV6), freeBind6, &on, length) == 0 else {
            let code = Errno(rawValue: errno)
            _ = Glibc.close(fd)
            throw .packetInfo(code)
        }
        SocketOptions.buffers(fd, bytes: bufferBytes, force: true)
        let bound = IPSocketAddress(IPAddress("::"), port: port).withSockaddr { Glibc.bind(fd, $0, $1) }
        guard bound == 0 else {
            let code = Errno(rawValue: errno)
            _ = Glibc.close(fd)
            throw .bind(port: port, code)
        }
        return PacketInfoSocket(descriptor: fd)
    }

    /// Waits at most `timeoutMs` for a datagram on any of `sockets`; the ones readable.
    public static func waitReadable(_ sockets: [PacketInfoSocket], timeoutMs: Int32) -> [Bool] {
        var polls = sockets.map { pollfd(fd: $0.descriptor, events: Int16(POLLIN), revents: 0) }
        guard poll(&polls, nfds_t(polls.count), timeoutMs) > 0 else { return sockets.map { _ in false } }
        return polls.map { $0.revents & Int16(POLLIN) != 0 }
    }

    /// One waiting datagram of an IPv6 socket into `buffer` (MSG_DONTWAIT): its length, its source and
    /// the local address it was sent to (nil without IPV6_PKTINFO); nil when none is waiting.
    public func receive6(into buffer: inout [UInt8], control: inout [UInt8]) -> (count: Int, from: IPSocketAddress, destination: IPAddress?)? {
        var from = sockaddr_in6()
        guard let (count, controlLength) = receiveMessage(into: &buffer, control: &control, name: &from) else { return nil }
        let source = withUnsafeBytes(of: from.sin6_addr) { IPAddress(bytes: Array($0)) }
        return (count, IPSocketAddress(source, port: Int(UInt16(bigEndian: from.sin6_port))),
                Self.destination6(control, length: controlLength))
    }

    /// The destination of an IPV6_PKTINFO control message (struct in6_pktinfo {in6_addr addr; int ifindex}).
    public static func destination6(_ control: [UInt8], length: Int) -> IPAddress? {
        guard let offset = controlData(control, length: length, level: Int32(IPPROTO_IPV6), type: packetInfo6, size: 16) else { return nil }
        return IPAddress(bytes: control[offset..<(offset + 16)])
    }

    /// Sends `bytes` to `to` from the local IPv6 address `from` (IPV6_PKTINFO ipi6_addr).
    public func send6(_ bytes: [UInt8], to: IPSocketAddress, from: IPAddress) {
        // cmsghdr (16) + in6_pktinfo (20), padded to 40.
        var control = [UInt8](repeating: 0, count: 40)
        let source = from.bytes
        control.withUnsafeMutableBytes { c in
            c.storeBytes(of: 36, toByteOffset: 0, as: Int.self)
            c.storeBytes(of: Int32(IPPROTO_IPV6), toByteOffset: 8, as: Int32.self)
            c.storeBytes(of: Self.packetInfo6, toByteOffset: 12, as: Int32.self)
            for (i, b) in source.prefix(16).enumerated() { c[16 + i] = b }
        }
        sendMessage(bytes, to: to, control: control)
    }
}
