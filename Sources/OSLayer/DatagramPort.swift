import Base
import CSocketBatch
public import SystemPackage
#if canImport(Glibc)
public import Glibc
#endif

/// The peer of a datagram as a small hashable value: family, address and port, read straight from
/// the `sockaddr` a receive call filled in (no text, no allocation), so a table of queries in
/// flight can be keyed by it.
public struct DatagramPeer: Hashable, Sendable {
    /// The IPv4 address in the low 32 bits of `low`, or the IPv6 address's 16 bytes.
    public var high: UInt64
    public var low: UInt64
    /// Host byte order.
    public var port: UInt16
    public var isIPv6: Bool

    public init(_ raw: sockaddr_in) {
        high = 0
        low = UInt64(UInt32(bigEndian: raw.sin_addr.s_addr))
        port = UInt16(bigEndian: raw.sin_port)
        isIPv6 = false
    }

    public init(_ raw: sockaddr_in6) {
        var parts: (UInt64, UInt64) = (0, 0)
        withUnsafeBytes(of: raw.sin6_addr) { bytes in
            var h: UInt64 = 0, l: UInt64 = 0
            for i in 0..<8 { h = h << 8 | UInt64(bytes[i]) }
            for i in 8..<16 { l = l << 8 | UInt64(bytes[i]) }
            parts = (h, l)
        }
        high = parts.0
        low = parts.1
        port = UInt16(bigEndian: raw.sin6_port)
        isIPv6 = true
    }

    /// The peer a receive call wrote into `storage`, or nil for a family other than IPv4 and IPv6.
    init?(_ storage: UnsafePointer<sockaddr_storage>) {
        switch Int32(storage.pointee.ss_family) {
        case AF_INET: self.init(UnsafeRawPointer(storage).load(as: sockaddr_in.self))
        case AF_INET6: self.init(UnsafeRawPointer(storage).load(as: sockaddr_in6.self))
        default: return nil
        }
    }
}

/// One UDP socket's datagrams sent with one `sendmmsg` per flush and read with one `recvmmsg` per
/// batch, on a descriptor this port owns (closed by `close()` or when the port is released).
///
/// The query engine's socket: NIO watches the socket (on a duplicate of this descriptor) and reads
/// the first datagram of each readiness event; the engine sends through this port and reads the
/// rest of the queue here, which saves the per-datagram system call, buffer, promise and pipeline
/// event of NIO's channel path (issue 27: the closed loop's client cost per query). Used from one
/// thread at a time.
public final class DatagramPort {
    /// The descriptor, or -1 once closed.
    public private(set) var fd: Int32

    /// Datagrams queued by `enqueue` and not yet taken by the kernel, in order.
    private struct Outgoing {
        var offset: Int
        var length: Int
        var name: sockaddr_storage
        var nameLength: socklen_t
    }
    private var outgoing: [Outgoing] = []
    private var arena: UnsafeMutableRawPointer
    private var arenaCapacity: Int
    private var arenaUsed = 0
    private var sendHeaders: UnsafeMutablePointer<tp_mmsghdr>
    private var sendIovecs: UnsafeMutablePointer<iovec>
    private var sendCapacity: Int

    /// Receive slots: each holds a whole datagram (65,536 bytes: no UDP payload is larger, so none is cut).
    public let receiveSlots: Int
    public let slotSize: Int
    private let receiveData: UnsafeMutableRawPointer
    private let receiveIovecs: UnsafeMutablePointer<iovec>
    private let receiveNames: UnsafeMutablePointer<sockaddr_storage>
    private let receiveHeaders: UnsafeMutablePointer<tp_mmsghdr>

    /// A non-blocking UDP socket bound to an ephemeral port on every address (IPv6: "::", which
    /// also takes IPv4-mapped peers, as NIO's own bind does), with `bufferBytes` of send and
    /// receive buffer asked for.
    public static func openSocket(ipv6: Bool, bufferBytes: Int32) throws(Errno) -> Int32 {
        let fd = socket(ipv6 ? AF_INET6 : AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
                        | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Errno(rawValue: errno) }
        SocketOptions.buffers(fd, bytes: bufferBytes)
        let bound = IPSocketAddress(ipv6 ? IPAddress("::") : nil, port: 0).withSockaddr { bind(fd, $0, $1) }
        guard bound == 0 else {
            let code = Errno(rawValue: errno)
            Glibc.close(fd)
            throw code
        }
        return fd
    }

    /// A socket from `openSocket` and its duplicate: `watched` for the event loop that reads the
    /// first datagram of each readiness event (it owns and closes that descriptor), the port for
    /// everything else (it closes the duplicate).
    public static func open(ipv6: Bool, bufferBytes: Int32) throws(Errno) -> (watched: Int32, port: DatagramPort) {
        let fd = try openSocket(ipv6: ipv6, bufferBytes: bufferBytes)
        let own = dup(fd)
        guard own >= 0 else {
            let code = Errno(rawValue: errno)
            Glibc.close(fd)
            throw code
        }
        return (fd, DatagramPort(fd: own))
    }

    /// The errno of a datagram larger than the socket takes (EMSGSIZE).
    public static let messageTooLong = EMSGSIZE
    /// The errno of a peer with no route (EHOSTUNREACH).
    public static let hostUnreachable = EHOSTUNREACH

    /// Takes ownership of `fd`, a UDP socket.
    public init(fd: Int32, receiveSlots: Int = 16, slotSize: Int = 65_536) {
        self.fd = fd
        arenaCapacity = 4096
        arena = .allocate(byteCount: arenaCapacity, alignment: 16)
        sendCapacity = 64
        sendHeaders = .allocate(capacity: sendCapacity)
        sendIovecs = .allocate(capacity: sendCapacity)
        self.receiveSlots = max(1, receiveSlots)
        self.slotSize = max(1, slotSize)
        receiveData = .allocate(byteCount: self.receiveSlots * self.slotSize, alignment: 16)
        receiveIovecs = .allocate(capacity: self.receiveSlots)
        receiveNames = .allocate(capacity: self.receiveSlots)
        receiveNames.initialize(repeating: sockaddr_storage(), count: self.receiveSlots)
        receiveHeaders = .allocate(capacity: self.receiveSlots)
        receiveHeaders.initialize(repeating: tp_mmsghdr(), count: self.receiveSlots)
        receiveIovecs.initialize(repeating: iovec(), count: self.receiveSlots)
    }

    deinit {
        close()
        arena.deallocate()
        sendHeaders.deallocate()
        sendIovecs.deallocate()
        receiveData.deallocate()
        receiveIovecs.deallocate()
        receiveNames.deallocate()
        receiveHeaders.deallocate()
    }

    /// Closes the descriptor (once); queued datagrams are dropped.
    public func close() {
        if fd >= 0 { _ = Glibc.close(fd) }
        fd = -1
        outgoing.removeAll()
        arenaUsed = 0
    }

    /// Datagrams queued and not yet sent.
    public var queued: Int { outgoing.count }

    /// Queues `bytes` for `name` (a `sockaddr_in` or `sockaddr_in6` of `nameLength` bytes, a
    /// `socklen_t`); `edit` may change the queued copy (the engine writes the DNS id there).
    public func enqueue(_ bytes: UnsafeRawBufferPointer, name: UnsafeRawPointer, nameLength: UInt32,
                        edit: (UnsafeMutableRawBufferPointer) -> Void = { _ in }) {
        if arenaUsed + bytes.count > arenaCapacity {
            var capacity = arenaCapacity
            while arenaUsed + bytes.count > capacity { capacity *= 2 }
            let grown = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
            grown.copyMemory(from: arena, byteCount: arenaUsed)
            arena.deallocate()
            arena = grown
            arenaCapacity = capacity
        }
        let copy = UnsafeMutableRawBufferPointer(start: arena + arenaUsed, count: bytes.count)
        if let base = bytes.baseAddress { copy.baseAddress?.copyMemory(from: base, byteCount: bytes.count) }
        edit(copy)
        var storage = sockaddr_storage()
        let length = min(Int(nameLength), MemoryLayout<sockaddr_storage>.size)
        withUnsafeMutableBytes(of: &storage) { $0.baseAddress?.copyMemory(from: name, byteCount: length) }
        outgoing.append(Outgoing(offset: arenaUsed, length: bytes.count, name: storage, nameLength: socklen_t(length)))
        arenaUsed += bytes.count
    }

    /// What a flush did: how many queued datagrams the kernel took or refused (`failed`, each with
    /// its position in the queue at the start of the flush and its errno), and whether the rest
    /// waits for room in the socket's send buffer (EAGAIN/ENOBUFS: call `flush` again later).
    public struct FlushResult {
        public var sent = 0
        public var failed: [(index: Int, errno: Int32)] = []
        public var blocked = false
    }

    /// Sends the queued datagrams, as many per `sendmmsg` as are queued. A datagram the kernel
    /// refuses (any error but EAGAIN, ENOBUFS and EINTR) is reported in `failed` and dropped; the
    /// ones after it are still sent.
    public func flush() -> FlushResult {
        var result = FlushResult()
        guard fd >= 0 else { return result }
        if outgoing.count > sendCapacity {
            sendHeaders.deallocate()
            sendIovecs.deallocate()
            sendCapacity = max(outgoing.count, sendCapacity * 2)
            sendHeaders = .allocate(capacity: sendCapacity)
            sendIovecs = .allocate(capacity: sendCapacity)
        }
        var next = 0
        let nameOffset = MemoryLayout<Outgoing>.offset(of: \Outgoing.name) ?? 0
        outgoing.withUnsafeMutableBufferPointer { queue in
            guard let base = queue.baseAddress else { return }
            for i in queue.indices {
                sendIovecs[i] = iovec(iov_base: arena + queue[i].offset, iov_len: queue[i].length)
                var header = tp_mmsghdr()
                header.msg_hdr.msg_name = UnsafeMutableRawPointer(base + i) + nameOffset
                header.msg_hdr.msg_namelen = queue[i].nameLength
                header.msg_hdr.msg_iov = sendIovecs + i
                header.msg_hdr.msg_iovlen = 1
                sendHeaders[i] = header
            }
            while next < queue.count {
                let n = tp_sendmmsg(fd, sendHeaders + next, UInt32(queue.count - next), Int32(MSG_DONTWAIT))
                if n > 0 {
                    next += Int(n)
                    result.sent += Int(n)
                    continue
                }
                let code = errno
                if code == EINTR { continue }
                if code == EAGAIN || code == EWOULDBLOCK || code == ENOBUFS {
                    result.blocked = true
                    break
                }
                // sendmmsg reports an error only for the first datagram of the call.
                result.failed.append((next, code))
                next += 1
            }
        }
        if next >= outgoing.count {
            outgoing.removeAll(keepingCapacity: true)
            arenaUsed = 0
        } else if next > 0 {
            outgoing.removeFirst(next)
        }
        return result
    }

    /// Reads what is queued on the socket without waiting, up to `receiveSlots` datagrams with one
    /// `recvmmsg`, and hands each to `body` with its peer; returns how many were read (0: none
    /// queued, or the socket is closed).
    public func receive(_ body: (UnsafeRawBufferPointer, DatagramPeer) -> Void) -> Int {
        guard fd >= 0 else { return 0 }
        for i in 0..<receiveSlots {
            receiveIovecs[i] = iovec(iov_base: receiveData + i * slotSize, iov_len: slotSize)
            var header = tp_mmsghdr()
            header.msg_hdr.msg_name = UnsafeMutableRawPointer(receiveNames + i)
            header.msg_hdr.msg_namelen = socklen_t(MemoryLayout<sockaddr_storage>.size)
            header.msg_hdr.msg_iov = receiveIovecs + i
            header.msg_hdr.msg_iovlen = 1
            receiveHeaders[i] = header
        }
        var n: Int32
        repeat {
            n = tp_recvmmsg(fd, receiveHeaders, UInt32(receiveSlots), Int32(MSG_DONTWAIT))
        } while n < 0 && errno == EINTR
        guard n > 0 else { return 0 }
        for i in 0..<Int(n) {
            guard let peer = DatagramPeer(receiveNames + i) else { continue }
            let length = min(slotSize, Int(receiveHeaders[i].msg_len))
            body(UnsafeRawBufferPointer(start: receiveData + i * slotSize, count: length), peer)
        }
        return Int(n)
    }
}
