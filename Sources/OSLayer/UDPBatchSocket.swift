import Base
import CSocketBatch
public import SystemPackage
#if canImport(Glibc)
import Glibc
#endif

/// A non-blocking IPv4 (or IPv6) UDP socket that sends and reads datagrams in batches, one `sendmmsg` or
/// `recvmmsg` (Linux) per batch: the sweep's send path, where one `sendto` per probe was a system
/// call per packet. Bound to an ephemeral port on every address; closed when released.
public final class UDPBatchSocket: Sendable {
    public let fd: Int32

    /// `bufferBytes`: SO_SNDBUF and SO_RCVBUF asked for (the kernel may cap them). `ipv6`: an IPv6
    /// socket (IPV6_V6ONLY) for an explicit IPv6 list, whose batches are made IPv6 (`useIPv6()`).
    public init(bufferBytes: Int32 = 8 << 20, ipv6: Bool = false) throws(Errno) {
        let fd = socket(ipv6 ? AF_INET6 : AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw Errno(rawValue: errno) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        SocketOptions.buffers(fd, bytes: bufferBytes)
        if ipv6 {
            // IPv6 only: the IPv4 addresses of a mixed list go out on the IPv4 socket.
            SocketOptions.set(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, 1)
        } else {
            // DF set, path MTU ignored (IP_PMTUDISC_PROBE, ip(7)): a datagram with DF from an
            // unconnected socket gets IP ID 0 instead of a hashed per-destination ID, a measurable
            // share of the kernel's send cost per probe (__ip_select_ident in the sweep's profile).
            SocketOptions.set(fd, Int32(IPPROTO_IP), IP_MTU_DISCOVER, Int32(IP_PMTUDISC_PROBE))
        }
        let bound = IPSocketAddress(ipv6 ? IPAddress("::") : nil, port: 0).withSockaddr { bind(fd, $0, $1) }
        guard bound == 0 else {
            let code = Errno(rawValue: errno)
            close(fd)
            throw code
        }
        self.fd = fd
    }

    deinit { close(fd) }

    /// Sends `batch`'s datagrams from `start` on with one sendmmsg; returns how many the kernel
    /// took (fewer when its buffer filled). Throws `.wouldBlock` when it took none for want of room,
    /// `.noBufferSpace` likewise, any other error for the datagram at `start`.
    public func send(_ batch: DatagramBatch, from start: Int) throws(Errno) -> Int {
        guard start < batch.count else { return 0 }
        let n = try SystemCall.retryingInterrupts {
            tp_sendmmsg(fd, batch.headers + start, UInt32(batch.count - start), 0)
        }
        return Int(n)
    }

    /// Reads up to `batch.capacity` datagrams with one recvmmsg (not waiting); `batch.count` is how
    /// many arrived (0 when none).
    public func receive(into batch: DatagramBatch) throws(Errno) {
        batch.prepareToReceive()
        do {
            let n = try SystemCall.retryingInterrupts {
                tp_recvmmsg(fd, batch.headers, UInt32(batch.capacity), Int32(MSG_DONTWAIT))
            }
            batch.count = Int(n)
        } catch {
            batch.count = 0
            if error != .wouldBlock { throw error }
        }
    }

    /// Waits at most `milliseconds` for the socket to become readable (or writable); true when it is.
    public func wait(readable: Bool, milliseconds: Int32) -> Bool {
        var p = pollfd(fd: fd, events: Int16(readable ? POLLIN : POLLOUT), revents: 0)
        return poll(&p, 1, milliseconds) > 0
    }
}

/// Datagrams of one batch with their IPv4 peers, in memory that stays put while the kernel reads
/// or fills it: `capacity` slots of `slotSize` bytes. Used by one thread at a time.
public final class DatagramBatch {
    public let capacity: Int
    public let slotSize: Int
    /// Datagrams in the batch (appended, or received).
    public internal(set) var count = 0
    /// The IPv6 peers of a batch made IPv6 (`useIPv6()`); nil: IPv4.
    var ipv6Names: IPv6Names?
    let data: UnsafeMutableRawPointer
    let iovecs: UnsafeMutablePointer<iovec>
    let names: UnsafeMutablePointer<sockaddr_in>
    let headers: UnsafeMutablePointer<tp_mmsghdr>
    /// Packet-socket batches (`PacketBatchSocket.makeBatch`): each slot is a whole IPv4 datagram,
    /// its headers written by the framer, every message addressed to the one link-level next hop.
    let framing: PacketFraming?
    let linkName: UnsafeMutablePointer<sockaddr_ll>?

    public convenience init(capacity: Int, slotSize: Int) { self.init(capacity: capacity, slotSize: slotSize, framing: nil) }

    init(capacity: Int, slotSize: Int, framing: PacketFraming?) {
        self.capacity = max(1, capacity)
        self.slotSize = max(1, slotSize) + (framing == nil ? 0 : IPv4UDPFramer.headerLength)
        self.framing = framing
        data = UnsafeMutableRawPointer.allocate(byteCount: self.capacity * self.slotSize, alignment: 16)
        iovecs = .allocate(capacity: self.capacity)
        names = .allocate(capacity: self.capacity)
        headers = .allocate(capacity: self.capacity)
        linkName = framing.map { framing in
            let name = UnsafeMutablePointer<sockaddr_ll>.allocate(capacity: 1)
            name.initialize(to: framing.link)
            return name
        }
        for i in 0..<self.capacity {
            names[i] = sockaddr_in()
            iovecs[i] = iovec(iov_base: data + i * self.slotSize, iov_len: self.slotSize)
            var header = tp_mmsghdr()
            header.msg_hdr.msg_name = UnsafeMutableRawPointer(names + i)
            header.msg_hdr.msg_namelen = socklen_t(MemoryLayout<sockaddr_in>.size)
            if let linkName {
                header.msg_hdr.msg_name = UnsafeMutableRawPointer(linkName)
                header.msg_hdr.msg_namelen = socklen_t(MemoryLayout<sockaddr_ll>.size)
            }
            header.msg_hdr.msg_iov = iovecs + i
            header.msg_hdr.msg_iovlen = 1
            headers[i] = header
        }
    }

    deinit {
        data.deallocate()
        iovecs.deallocate()
        names.deallocate()
        headers.deallocate()
        linkName?.deallocate()
    }

    public func removeAll() { count = 0 }

    /// Appends a datagram for `address` (host byte order) and `port`, its payload written by `fill`
    /// into the slot (returning its length); false when the batch is full or `fill` returns nil.
    public func append(to address: UInt32, port: UInt16, fill: (UnsafeMutableRawBufferPointer) -> Int?) -> Bool {
        guard count < capacity else { return false }
        let start = data + count * slotSize
        let headroom = framing == nil ? 0 : IPv4UDPFramer.headerLength
        let slot = UnsafeMutableRawBufferPointer(start: start + headroom, count: slotSize - headroom)
        guard let length = fill(slot), length > 0, length <= slot.count else { return false }
        names[count].sin_family = sa_family_t(AF_INET)
        names[count].sin_port = port.bigEndian
        names[count].sin_addr.s_addr = address.bigEndian
        if let framing {
            guard let frame = framing.framer.write(into: start, destination: address, port: port, payloadLength: length) else { return false }
            iovecs[count].iov_len = frame
        } else {
            iovecs[count].iov_len = length
            headers[count].msg_hdr.msg_namelen = socklen_t(MemoryLayout<sockaddr_in>.size)
        }
        count += 1
        return true
    }

    /// Datagram `index` as received (or as appended).
    public func payload(_ index: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: data + index * slotSize, count: min(slotSize, Int(headers[index].msg_len)))
    }

    /// The peer of datagram `index`, host byte order.
    public func peer(_ index: Int) -> UInt32 { UInt32(bigEndian: names[index].sin_addr.s_addr) }

    func prepareToReceive() {
        for i in 0..<capacity {
            iovecs[i].iov_len = slotSize
            headers[i].msg_hdr.msg_namelen = socklen_t(ipv6Names == nil ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size)
            headers[i].msg_len = 0
        }
        count = 0
    }
}

/// CLOCK_MONOTONIC in nanoseconds, and sleeping on it.
public enum MonotonicClock {
    public static func nanos() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// Sleeps `nanoseconds`, the rest again after a signal.
    public static func sleep(nanoseconds: UInt64) {
        var ts = timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
        var rest = timespec()
        _ = try? SystemCall.retryingInterrupts {
            let result = nanosleep(&ts, &rest)
            ts = rest
            return result
        }
    }
}
