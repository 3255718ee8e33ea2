import CSocketBatch
public import SystemPackage
#if canImport(Glibc)
import Glibc
#endif

/// What a packet-socket batch needs to send a probe without the kernel's UDP stack: the framer
/// (source address and port) and the link-level destination (interface and next hop).
public struct PacketFraming: @unchecked Sendable {
    public let framer: IPv4UDPFramer
    let link: sockaddr_ll

    /// `linkAddress`: the next hop's hardware address (6 bytes on Ethernet and loopback, none on a
    /// link without one, such as a TUN device).
    public init(framer: IPv4UDPFramer, interfaceIndex: Int32, linkAddress: [UInt8]) {
        self.framer = framer
        var link = sockaddr_ll()
        link.sll_family = UInt16(AF_PACKET)
        link.sll_protocol = tp_eth_p_ip.bigEndian
        link.sll_ifindex = interfaceIndex
        link.sll_halen = UInt8(min(linkAddress.count, 8))
        withUnsafeMutableBytes(of: &link.sll_addr) { raw in
            for (i, byte) in linkAddress.prefix(8).enumerated() { raw[i] = byte }
        }
        self.link = link
    }

    /// A batch whose slots hold `payloadSize` bytes of payload after the frame's headers.
    public func makeBatch(capacity: Int, payloadSize: Int) -> DatagramBatch {
        DatagramBatch(capacity: capacity, slotSize: payloadSize, framing: self)
    }
}

/// A packet socket (packet(7), AF_PACKET with SOCK_DGRAM: the kernel adds the link header from
/// the next hop's address) that sends whole IPv4 datagrams built by the caller, one sendmmsg per
/// batch: the sweep's send path without the kernel's UDP, IP and routing work per probe (ZMap's
/// way). It receives nothing (protocol 0: no receive hook); answers go to a UDP socket bound to
/// the frames' source port. Needs CAP_NET_RAW. Closed when released.
public final class PacketBatchSocket: Sendable {
    public let fd: Int32
    public let framing: PacketFraming
    /// Whether PACKET_QDISC_BYPASS took (Linux 3.14+): frames go straight to the driver.
    public let bypassesQueueing: Bool

    public init(framing: PacketFraming, bufferBytes: Int32 = 8 << 20) throws(Errno) {
        let fd = socket(AF_PACKET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw Errno(rawValue: errno) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        SocketOptions.buffers(fd, bytes: bufferBytes, receive: false)
        bypassesQueueing = SocketOptions.set(fd, tp_sol_packet, tp_packet_qdisc_bypass, 1)
        // Bound to the interface with protocol 0: sends go out there, nothing is received.
        var local = sockaddr_ll()
        local.sll_family = UInt16(AF_PACKET)
        local.sll_ifindex = framing.link.sll_ifindex
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_ll>.size)) }
        }
        guard bound == 0 else {
            let code = Errno(rawValue: errno)
            close(fd)
            throw code
        }
        self.fd = fd
        self.framing = framing
    }

    deinit { close(fd) }

    /// A batch whose slots hold `payloadSize` bytes of payload after the frame's headers.
    public func makeBatch(capacity: Int, payloadSize: Int) -> DatagramBatch {
        framing.makeBatch(capacity: capacity, payloadSize: payloadSize)
    }

    /// As `UDPBatchSocket.send`: the batch must come from `makeBatch`.
    public func send(_ batch: DatagramBatch, from start: Int) throws(Errno) -> Int {
        guard start < batch.count else { return 0 }
        guard batch.framing != nil else { throw .invalidArgument }
        let n = try SystemCall.retryingInterrupts {
            tp_sendmmsg(fd, batch.headers + start, UInt32(batch.count - start), 0)
        }
        return Int(n)
    }

    /// Waits at most `milliseconds` for room in the socket's send buffer; true when there is.
    public func waitWritable(milliseconds: Int32) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        return poll(&p, 1, milliseconds) > 0
    }
}

extension DatagramBatch {
    /// The bytes datagram `index` sends: for a packet-socket batch, the whole IPv4 datagram.
    public func outgoing(_ index: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: iovecs[index].iov_base, count: iovecs[index].iov_len)
    }
}

extension UDPBatchSocket {
    /// The port the socket is bound to (host order; 0 when it cannot be read): the packet path's
    /// frames carry it as their source port so that answers come back to this socket.
    public var localPort: UInt16 {
        var local = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return named == 0 ? UInt16(bigEndian: local.sin_port) : 0
    }
}

/// The socket a sweep's probes leave by: the kernel's UDP socket or a packet socket.
public enum BatchSender: Sendable {
    case udp(UDPBatchSocket)
    case packet(PacketBatchSocket)

    /// A batch of `capacity` datagrams of at most `payloadSize` bytes of payload for this socket.
    public func makeBatch(capacity: Int, payloadSize: Int) -> DatagramBatch {
        switch self {
        case .udp: DatagramBatch(capacity: capacity, slotSize: payloadSize)
        case .packet(let socket): socket.makeBatch(capacity: capacity, payloadSize: payloadSize)
        }
    }

    /// As `UDPBatchSocket.send`.
    public func send(_ batch: DatagramBatch, from start: Int) throws(Errno) -> Int {
        switch self {
        case .udp(let socket): try socket.send(batch, from: start)
        case .packet(let socket): try socket.send(batch, from: start)
        }
    }

    /// Waits at most `milliseconds` for room to send.
    public func waitForRoom(milliseconds: Int32) {
        switch self {
        case .udp(let socket): _ = socket.wait(readable: false, milliseconds: milliseconds)
        case .packet(let socket): _ = socket.waitWritable(milliseconds: milliseconds)
        }
    }
}
