import Base
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where the packet-socket send path sends from: the interface every address of the ranges leaves
/// by, the next hop's hardware address on it, and the source address the kernel would choose.
public struct PacketRoute: Sendable, Hashable {
    public var interface: String
    public var interfaceIndex: Int32
    /// Host byte order.
    public var source: UInt32
    /// The next hop (a gateway); nil on a link with no link-level addresses (a TUN device).
    public var gateway: UInt32?
    public var linkAddress: [UInt8]
    /// ARPHRD_* of the interface (1 Ethernet, 772 loopback, 65534 none).
    public var hardwareType: Int

    public init(interface: String, interfaceIndex: Int32, source: UInt32, gateway: UInt32?, linkAddress: [UInt8], hardwareType: Int) {
        self.interface = interface
        self.interfaceIndex = interfaceIndex
        self.source = source
        self.gateway = gateway
        self.linkAddress = linkAddress
        self.hardwareType = hardwareType
    }
}

/// Why the packet-socket path cannot be used (then the sweep sends through UDP, or fails when the
/// packet path was asked for by name).
public struct PacketRouteUnavailable: Error, Sendable, Hashable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Reads the kernel's IPv4 main routing table and neighbour table (procfs) and chooses the route of
/// a sweep's ranges. Only the main table is read (policy routing is not): the kernel's own source
/// address for the first target must be an address of the chosen interface, which catches a
/// policy route sending elsewhere.
public enum PacketRouteTable {
    public struct Entry: Sendable, Hashable {
        public var interface: String
        /// Host byte order.
        public var destination: UInt32
        public var mask: UInt32
        public var gateway: UInt32
        public var flags: UInt32
        public var metric: UInt32
        public var prefixLength: Int { mask.nonzeroBitCount }
        public var last: UInt32 { destination | ~mask }
        /// RTF_GATEWAY (route(8)).
        public var viaGateway: Bool { flags & 0x2 != 0 }
        /// RTF_UP and not RTF_REJECT.
        public var usable: Bool { flags & 0x1 != 0 && flags & 0x200 == 0 }

        public init(interface: String, destination: UInt32, mask: UInt32, gateway: UInt32, flags: UInt32, metric: UInt32) {
            self.interface = interface
            self.destination = destination
            self.mask = mask
            self.gateway = gateway
            self.flags = flags
            self.metric = metric
        }

        func sameHop(as other: Entry) -> Bool { interface == other.interface && gateway == other.gateway }
    }

    /// `/proc/net/route`: a header line, then `Iface Destination Gateway Flags RefCnt Use Metric Mask ...`
    /// with addresses as the kernel's network-order word printed in hexadecimal. Lines that do not
    /// read are skipped.
    public static func parseRoutes(_ text: String) -> [Entry] {
        var entries: [Entry] = []
        for line in text.split(separator: "\n").dropFirst() {
            let f = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard f.count >= 8, let dst = UInt32(f[1], radix: 16), let gw = UInt32(f[2], radix: 16),
                  let flags = UInt32(f[3], radix: 16), let metric = UInt32(f[6]), let mask = UInt32(f[7], radix: 16) else { continue }
            // The word was printed as the machine reads it: network order back to a number.
            entries.append(Entry(interface: String(f[0]), destination: UInt32(bigEndian: dst), mask: UInt32(bigEndian: mask),
                                 gateway: UInt32(bigEndian: gw), flags: flags, metric: metric))
        }
        return entries
    }

    /// `/proc/net/arp`: `IP address  HW type  Flags  HW address  Mask  Device`; only complete entries
    /// (ATF_COM, 0x2) with a readable 6-byte address.
    public static func parseNeighbours(_ text: String) -> [(address: UInt32, device: String, linkAddress: [UInt8])] {
        var found: [(address: UInt32, device: String, linkAddress: [UInt8])] = []
        for line in text.split(separator: "\n").dropFirst() {
            let f = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard f.count >= 6, let address = parseDotted(f[0]), f[2].hasPrefix("0x"),
                  let flags = UInt32(f[2].dropFirst(2), radix: 16), flags & 0x2 != 0 else { continue }
            let bytes = f[3].split(separator: ":").compactMap { $0.count == 2 ? UInt8($0, radix: 16) : nil }
            guard bytes.count == 6 else { continue }
            found.append((address, String(f[5]), bytes))
        }
        return found
    }

    static func parseDotted(_ text: Substring) -> UInt32? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var value: UInt32 = 0
        for p in parts {
            guard p.count <= 3, let b = UInt8(p) else { return nil }
            value = value << 8 | UInt32(b)
        }
        return value
    }

    /// The usable route with the longest prefix holding `address` (lowest metric among equals).
    public static func lookup(_ address: UInt32, in routes: [Entry]) -> Entry? {
        var best: Entry?
        for e in routes where e.usable && address & e.mask == e.destination & e.mask {
            if let b = best, b.prefixLength > e.prefixLength || (b.prefixLength == e.prefixLength && b.metric <= e.metric) { continue }
            best = e
        }
        return best
    }

    /// The one route by which every address of `blocks` (first...last, host order) leaves: the
    /// route of the first address, when each block's ends take the same interface and next hop and
    /// no more specific route inside a block sends elsewhere.
    public static func choose(for blocks: [(first: UInt32, last: UInt32)], in routes: [Entry]) -> Result<Entry, PacketRouteUnavailable> {
        guard let head = blocks.first else { return .failure(PacketRouteUnavailable("no addresses to route")) }
        guard let chosen = lookup(head.first, in: routes) else {
            return .failure(PacketRouteUnavailable("no route to \(describe(head.first)) in the main table (a local or policy route)"))
        }
        guard routes.count <= 10_000 else { return .failure(PacketRouteUnavailable("\(routes.count) routes: too many to check the ranges against")) }
        for block in blocks {
            for end in [block.first, block.last] {
                guard let e = lookup(end, in: routes), e.sameHop(as: chosen) else {
                    return .failure(PacketRouteUnavailable("\(describe(end)) leaves by another route than \(describe(head.first)) (\(chosen.interface))"))
                }
            }
            for e in routes where e.usable && e.prefixLength > chosen.prefixLength && e.destination <= block.last && block.first <= e.last
                && !e.sameHop(as: chosen) {
                return .failure(PacketRouteUnavailable("the route \(describe(e.destination))/\(e.prefixLength) (\(e.interface)) splits the range \(describe(block.first))-\(describe(block.last))"))
            }
        }
        return .success(chosen)
    }

    /// Finds the route of `blocks` on this machine, resolving the gateway's hardware address (one
    /// UDP datagram to its discard port, RFC 863, makes the kernel ask for it when it is not known)
    /// within `waitMillis`.
    public static func resolve(blocks: [(first: UInt32, last: UInt32)], waitMillis: Int = 1000) -> Result<PacketRoute, PacketRouteUnavailable> {
        guard let text = try? String(contentsOfFile: "/proc/net/route", encoding: .utf8) else {
            return .failure(PacketRouteUnavailable("cannot read /proc/net/route"))
        }
        let entry: Entry
        switch choose(for: blocks, in: parseRoutes(text)) {
        case .success(let e): entry = e
        case .failure(let reason): return .failure(reason)
        }
        let index = if_nametoindex(entry.interface)
        guard index > 0 else { return .failure(PacketRouteUnavailable("no interface \(entry.interface)")) }
        let typeText = (try? String(contentsOfFile: "/sys/class/net/\(entry.interface)/type", encoding: .utf8)) ?? ""
        guard let type = Int(typeText.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            return .failure(PacketRouteUnavailable("cannot read the link type of \(entry.interface)"))
        }
        guard let first = blocks.first?.first, let source = kernelSource(to: first) else {
            return .failure(PacketRouteUnavailable("the kernel chooses no source address for the ranges"))
        }
        guard interfaceAddresses(entry.interface).contains(source) else {
            return .failure(PacketRouteUnavailable("the kernel's source \(describe(source)) is not an address of \(entry.interface) (a policy route?)"))
        }
        var route = PacketRoute(interface: entry.interface, interfaceIndex: Int32(index), source: source,
                                gateway: entry.viaGateway ? entry.gateway : nil, linkAddress: [], hardwareType: type)
        switch type {
        case 65534:  // ARPHRD_NONE: a TUN device; no link-level address at all.
            return .success(route)
        case 772:    // ARPHRD_LOOPBACK: Ethernet framing with a zero address.
            route.linkAddress = [0, 0, 0, 0, 0, 0]
            return .success(route)
        case 1:      // ARPHRD_ETHER: the gateway's address from the neighbour table.
            guard entry.viaGateway else {
                return .failure(PacketRouteUnavailable("the ranges are on-link on \(entry.interface): every address would need its own neighbour entry"))
            }
            guard let mac = neighbour(entry.gateway, on: entry.interface, waitMillis: waitMillis) else {
                return .failure(PacketRouteUnavailable("the gateway \(describe(entry.gateway)) on \(entry.interface) has no hardware address in the neighbour table"))
            }
            route.linkAddress = mac
            return .success(route)
        default:
            return .failure(PacketRouteUnavailable("\(entry.interface) has link type \(type) (only Ethernet, loopback and none are framed)"))
        }
    }

    /// Connections the kernel tracks in this network namespace (nf_conntrack_count); nil when
    /// connection tracking is not loaded. Frames from a packet socket skip it, so a stateful
    /// firewall that tracks connections here sees their answers as unsolicited and may drop them.
    public static func trackedConnections() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/sys/net/netfilter/nf_conntrack_count", encoding: .utf8) else { return nil }
        return Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    static func describe(_ a: UInt32) -> String { "\(a >> 24).\(a >> 16 & 0xFF).\(a >> 8 & 0xFF).\(a & 0xFF)" }

    /// The source address the kernel gives a UDP socket connected to `destination` (connect sends nothing).
    static func kernelSource(to destination: UInt32) -> UInt32? {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var peer = sockaddr_in()
        peer.sin_family = sa_family_t(AF_INET)
        peer.sin_port = UInt16(53).bigEndian
        peer.sin_addr.s_addr = destination.bigEndian
        let connected = withUnsafePointer(to: &peer) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return nil }
        var local = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { return nil }
        return UInt32(bigEndian: local.sin_addr.s_addr)
    }

    /// The IPv4 addresses of interface `name`, host order.
    static func interfaceAddresses(_ name: String) -> Set<UInt32> {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let head = list else { return [] }
        defer { freeifaddrs(head) }
        var found: Set<UInt32> = []
        var cursor: UnsafeMutablePointer<ifaddrs>? = head
        while let entry = cursor {
            if let address = entry.pointee.ifa_addr, address.pointee.sa_family == sa_family_t(AF_INET),
               String(cString: entry.pointee.ifa_name) == name {
                let value = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr.s_addr }
                found.insert(UInt32(bigEndian: value))
            }
            cursor = entry.pointee.ifa_next
        }
        return found
    }

    /// The hardware address of `address` on `device` from /proc/net/arp; when it is not there, one
    /// datagram to its discard port makes the kernel resolve it, and the table is read again until
    /// `waitMillis` passes.
    static func neighbour(_ address: UInt32, on device: String, waitMillis: Int) -> [UInt8]? {
        func read() -> [UInt8]? {
            guard let text = try? String(contentsOfFile: "/proc/net/arp", encoding: .utf8) else { return nil }
            return parseNeighbours(text).first { $0.address == address && $0.device == device }?.linkAddress
        }
        if let mac = read() { return mac }
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        if fd >= 0 {
            var peer = sockaddr_in()
            peer.sin_family = sa_family_t(AF_INET)
            peer.sin_port = UInt16(9).bigEndian
            peer.sin_addr.s_addr = address.bigEndian
            _ = withUnsafePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, nil, 0, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            close(fd)
        }
        let deadline = MonotonicClock.nanos() + UInt64(max(0, waitMillis)) * 1_000_000
        while MonotonicClock.nanos() < deadline {
            MonotonicClock.sleep(nanoseconds: 10_000_000)
            if let mac = read() { return mac }
        }
        return nil
    }
}
