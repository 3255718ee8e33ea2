import CSocketBatch
#if canImport(Glibc)
import Glibc
#endif

// The IPv6 side of the sweep's batches: an explicit IPv6 list is swept over an IPv6
// `UDPBatchSocket` whose batches carry `sockaddr_in6` peers (the IPv4 ones keep `sockaddr_in`).

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
