public import SystemPackage
#if canImport(Glibc)
import Glibc
#endif

/// A UDP socket that learns each datagram's destination address (IP_PKTINFO, ip(7)) and answers from
/// that same address: one socket serving every address of a local range (`lab internet`).
public struct PacketInfoSocket: Sendable {
    public let descriptor: Int32

    /// What failed while setting the socket up, with the errno.
    public enum SetupError: Error, Sendable, CustomStringConvertible {
        case socket(Errno)
        case packetInfo(Errno)
        case bind(port: Int, Errno)

        public var description: String {
            switch self {
            case .socket(let code): "socket: \(code)"
            case .packetInfo(let code): "IP_PKTINFO: \(code)"
            case .bind(let port, let code): "bind 0.0.0.0:\(port): \(code)"
            }
        }
    }

    /// IP_PKTINFO (8, <linux/in.h>).
    static let packetInfoOption: Int32 = 8

    /// An IPv4 UDP socket bound to 0.0.0.0:`port` in the calling thread's namespace, with IP_PKTINFO
    /// on and send and receive buffers of `bufferBytes` asked for (the kernel may give less).
    public static func bind(port: Int, bufferBytes: Int32) throws(SetupError) -> PacketInfoSocket {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw .socket(Errno(rawValue: errno)) }
        var on: Int32 = 1
        guard setsockopt(fd, Int32(IPPROTO_IP), packetInfoOption, &on, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            let code = Errno(rawValue: errno)
            _ = Glibc.close(fd)
            throw .packetInfo(code)
        }
        // Forced as root: the lab's simulated hosts take bursts of a whole packet-socket sweep.
        SocketOptions.buffers(fd, bytes: bufferBytes, force: true)
        let bound = IPSocketAddress(nil, port: port).withSockaddr { Glibc.bind(fd, $0, $1) }
        guard bound == 0 else {
            let code = Errno(rawValue: errno)
            _ = Glibc.close(fd)
            throw .bind(port: port, code)
        }
        return PacketInfoSocket(descriptor: fd)
    }

    /// Waits at most `timeoutMs` for a datagram (`poll`).
    public func waitReadable(timeoutMs: Int32) -> Bool {
        var p = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, timeoutMs) > 0
    }

    /// One waiting datagram into `buffer` (MSG_DONTWAIT): its length, its IPv4 source and the local
    /// address it was sent to; nil when none is waiting. `destination` is nil when the kernel gave no
    /// IP_PKTINFO for it.
    public func receive(into buffer: inout [UInt8], control: inout [UInt8]) -> (count: Int, from: IPSocketAddress, destination: UInt32?)? {
        var from = sockaddr_in()
        guard let (count, controlLength) = receiveMessage(into: &buffer, control: &control, name: &from) else { return nil }
        return (count, IPSocketAddress(from), Self.destination(control, length: controlLength))
    }

    /// recvmsg(MSG_DONTWAIT) of one datagram with its source in `name` (a sockaddr_in or sockaddr_in6):
    /// its length and the control bytes' length; nil when none is waiting.
    func receiveMessage<Name>(into buffer: inout [UInt8], control: inout [UInt8], name: inout Name) -> (Int, Int)? {
        var iov = iovec()
        var header = msghdr()
        let count = buffer.withUnsafeMutableBytes { data in
            control.withUnsafeMutableBytes { cbuf in
                withUnsafeMutablePointer(to: &name) { namePointer in
                    withUnsafeMutablePointer(to: &iov) { iovPointer in
                        iovPointer.pointee.iov_base = data.baseAddress
                        iovPointer.pointee.iov_len = data.count
                        header.msg_name = UnsafeMutableRawPointer(namePointer)
                        header.msg_namelen = socklen_t(MemoryLayout<Name>.size)
                        header.msg_iov = iovPointer
                        header.msg_iovlen = 1
                        header.msg_control = cbuf.baseAddress
                        header.msg_controllen = cbuf.count
                        return recvmsg(descriptor, &header, Int32(MSG_DONTWAIT))
                    }
                }
            }
        }
        guard count > 0 else { return nil }
        return (count, Int(header.msg_controllen))
    }

    /// The header destination address of an IP_PKTINFO control message (struct cmsghdr is
    /// {size_t len; int level; int type}, then struct in_pktinfo {int ifindex; in_addr spec_dst; in_addr addr}).
    public static func destination(_ control: [UInt8], length: Int) -> UInt32? {
        guard let offset = controlData(control, length: length, level: Int32(IPPROTO_IP), type: packetInfoOption, size: 12) else { return nil }
        let raw = control.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self) }
        return UInt32(bigEndian: raw)
    }

    /// Where the data of the first control message of `level` and `type` (at least `size` bytes) starts.
    static func controlData(_ control: [UInt8], length: Int, level wanted: Int32, type wantedType: Int32, size: Int) -> Int? {
        var offset = 0
        let headerSize = 16
        while offset + headerSize <= min(length, control.count) {
            let len = control.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: Int.self) }
            let level = control.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + 8, as: Int32.self) }
            let type = control.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + 12, as: Int32.self) }
            guard len >= headerSize else { return nil }
            if level == wanted, type == wantedType, offset + headerSize + size <= control.count { return offset + headerSize }
            offset += (len + 7) & ~7
        }
        return nil
    }

    /// Sends `bytes` to `to` from the local IPv4 address `from` (IP_PKTINFO ipi_spec_dst).
    public func send(_ bytes: [UInt8], to: IPSocketAddress, from: UInt32) {
        var control = [UInt8](repeating: 0, count: 32)
        control.withUnsafeMutableBytes { c in
            c.storeBytes(of: 28, toByteOffset: 0, as: Int.self)
            c.storeBytes(of: Int32(IPPROTO_IP), toByteOffset: 8, as: Int32.self)
            c.storeBytes(of: Self.packetInfoOption, toByteOffset: 12, as: Int32.self)
            c.storeBytes(of: from.bigEndian, toByteOffset: 20, as: UInt32.self)
        }
        sendMessage(bytes, to: to, control: control)
    }

    /// sendmsg of `bytes` to `to` with the control message bytes `control`.
    func sendMessage(_ bytes: [UInt8], to: IPSocketAddress, control: [UInt8]) {
        var bytes = bytes
        var control = control
        var iov = iovec()
        var header = msghdr()
        _ = bytes.withUnsafeMutableBytes { data in
            control.withUnsafeMutableBytes { cbuf in
                to.withSockaddr { address, length in
                    withUnsafeMutablePointer(to: &iov) { iovPointer in
                        iovPointer.pointee.iov_base = data.baseAddress
                        iovPointer.pointee.iov_len = data.count
                        header.msg_name = UnsafeMutableRawPointer(mutating: address)
                        header.msg_namelen = length
                        header.msg_iov = iovPointer
                        header.msg_iovlen = 1
                        header.msg_control = cbuf.baseAddress
                        header.msg_controllen = cbuf.count
                        return sendmsg(descriptor, &header, 0)
                    }
                }
            }
        }
    }

    public func close() { _ = Glibc.close(descriptor) }
}
