#if canImport(Glibc)
import Glibc
#endif

/// A resolver to probe: an IPv4 or IPv6 address and a UDP port.
public struct ResolverAddress: Hashable, Sendable, CustomStringConvertible, Comparable {
    /// Network-order address bytes: 4 for IPv4, 16 for IPv6.
    public let bytes: [UInt8]
    public let port: Int

    public init?(bytes: [UInt8], port: Int) {
        guard bytes.count == 4 || bytes.count == 16, (1...65535).contains(port) else { return nil }
        self.bytes = bytes
        self.port = port
    }

    public var isIPv6: Bool { bytes.count == 16 }

    /// The address alone in its canonical text form.
    public var host: String {
        var buffer = [CChar](repeating: 0, count: 64)
        let family = isIPv6 ? AF_INET6 : AF_INET
        _ = bytes.withUnsafeBytes { raw in inet_ntop(family, raw.baseAddress, &buffer, socklen_t(buffer.count)) }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// "ip:port", or "[v6]:port".
    public var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    public static func < (a: ResolverAddress, b: ResolverAddress) -> Bool {
        a.bytes.count != b.bytes.count ? a.bytes.count < b.bytes.count
            : a.bytes != b.bytes ? a.bytes.lexicographicallyPrecedes(b.bytes) : a.port < b.port
    }

    static func parseAddress(_ text: String) -> [UInt8]? {
        if text.contains(":") {
            var a = in6_addr()
            guard inet_pton(AF_INET6, text, &a) == 1 else { return nil }
            return withUnsafeBytes(of: a) { Array($0) }
        }
        var a = in_addr()
        guard inet_pton(AF_INET, text, &a) == 1 else { return nil }
        return withUnsafeBytes(of: a) { Array($0) }
    }
}

/// Resolver lists as scanners take them: `ip`, `ip:port`, `[v6]:port`, bare IPv6, CIDR blocks (with a cap),
/// `#` comments and blank lines. A bad line is reported with its number and skipped.
public struct ResolverList: Sendable {
    public struct Issue: Hashable, Sendable, CustomStringConvertible {
        public var source: String
        public var line: Int
        public var text: String
        public var reason: String
        public var description: String { "\(source):\(line): \(reason): \(text)" }
    }

    public private(set) var resolvers: [ResolverAddress] = []
    public private(set) var issues: [Issue] = []
    private var seen: Set<ResolverAddress> = []

    public static let defaultCIDRCap = 65_536

    public init() {}

    public mutating func add(_ address: ResolverAddress) {
        if seen.insert(address).inserted { resolvers.append(address) }
    }

    /// Adds the entries of a list file's text; `source` names the file in issues.
    public mutating func add(text: String, source: String, defaultPort: Int = 53, cidrCap: Int = defaultCIDRCap) {
        add(bytes: Array(text.utf8), source: source, defaultPort: defaultPort, cidrCap: cidrCap)
    }

    /// Adds the entries of a list file's bytes, split into lines at LF bytes (a CR before it, a
    /// UTF-8 byte-order mark at the start are dropped), each line decoded on its own: bytes that
    /// are not UTF-8 (a Latin-1 comment, say) harm only the line that holds them, and only when they
    /// are in its entry rather than its comment.
    public mutating func add(bytes: [UInt8], source: String, defaultPort: Int = 53, cidrCap: Int = defaultCIDRCap) {
        var number = 0
        var start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        while start <= bytes.count {
            let end = bytes[start...].firstIndex(of: 0x0A) ?? bytes.count
            number += 1
            var line = bytes[start..<end]
            if line.last == 0x0D { line = line.dropLast() }
            if let hash = line.firstIndex(of: UInt8(ascii: "#")) { line = line[..<hash] }
            addLine(line, number: number, source: source, defaultPort: defaultPort, cidrCap: cidrCap)
            start = end + 1
        }
    }

    private mutating func addLine(_ line: ArraySlice<UInt8>, number: Int, source: String, defaultPort: Int, cidrCap: Int) {
        let raw = String(decoding: line, as: UTF8.self)
        let entry = raw[...].trimmingCharacters(in: " \t\r")
        guard !entry.isEmpty else { return }
        guard String(validating: line, as: UTF8.self) != nil else {
            issues.append(Issue(source: source, line: number, text: entry, reason: "not UTF-8 text (a byte outside UTF-8 in the entry)"))
            return
        }
        do {
            let (addresses, warning) = try Self.parse(entry: entry, defaultPort: defaultPort, cidrCap: cidrCap)
            addresses.forEach { add($0) }
            if let warning { issues.append(Issue(source: source, line: number, text: entry, reason: warning)) }
        } catch {
            issues.append(Issue(source: source, line: number, text: entry, reason: error.reason))
        }
    }

    public struct EntryError: Error, CustomStringConvertible, Sendable {
        public let reason: String
        public var description: String { reason }
    }

    /// One entry: returns its addresses and, for a CIDR block cut at the cap, a warning.
    public static func parse(entry: String, defaultPort: Int = 53,
                             cidrCap: Int = defaultCIDRCap) throws(EntryError) -> ([ResolverAddress], String?) {
        // inet_pton reads a C string: an embedded NUL would cut the entry short and let junk pass.
        guard entry.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else {
            throw EntryError(reason: "control character in the entry")
        }
        var host = entry
        var port = defaultPort
        if entry.hasPrefix("[") {
            guard let close = entry.firstIndex(of: "]") else { throw EntryError(reason: "missing ']'") }
            host = String(entry[entry.index(after: entry.startIndex)..<close])
            let rest = entry[entry.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":"), let p = Int(rest.dropFirst()) else { throw EntryError(reason: "bad port after ']'") }
                port = p
            }
        } else if entry.filter({ $0 == ":" }).count == 1 {
            let parts = entry.split(separator: ":", omittingEmptySubsequences: false)
            host = String(parts[0])
            guard let p = Int(parts[1]) else { throw EntryError(reason: "bad port '\(parts[1])'") }
            port = p
        }
        guard (1...65535).contains(port) else { throw EntryError(reason: "port \(port) out of range 1-65535") }
        if let slash = host.firstIndex(of: "/") {
            return try cidr(address: String(host[..<slash]), prefix: String(host[host.index(after: slash)...]),
                            port: port, cap: cidrCap)
        }
        guard let bytes = ResolverAddress.parseAddress(host), let address = ResolverAddress(bytes: bytes, port: port) else {
            throw EntryError(reason: "not an IP address")
        }
        return ([address], nil)
    }

    private static func cidr(address: String, prefix: String, port: Int,
                             cap: Int) throws(EntryError) -> ([ResolverAddress], String?) {
        guard let base = ResolverAddress.parseAddress(address) else { throw EntryError(reason: "not an IP address") }
        let bits = base.count * 8
        guard let length = Int(prefix), (0...bits).contains(length) else {
            throw EntryError(reason: "prefix length '\(prefix)' out of range 0-\(bits)")
        }
        let hostBits = bits - length
        // IPv4 blocks of /30 and larger skip the network and broadcast addresses.
        let skipEnds = base.count == 4 && hostBits >= 2
        let total: Double = hostBits >= 63 ? .infinity : Double(UInt64(1) << UInt64(hostBits)) - (skipEnds ? 2 : 0)
        let count = Int(min(total, Double(max(cap, 0))))
        var network = base
        for i in 0..<network.count {
            let keep = max(0, min(8, length - i * 8))
            network[i] &= keep == 8 ? 0xFF : UInt8(truncatingIfNeeded: 0xFF << (8 - keep))
        }
        var out: [ResolverAddress] = []
        out.reserveCapacity(count)
        var current = network
        if skipEnds { increment(&current) }
        for _ in 0..<count {
            if let a = ResolverAddress(bytes: current, port: port) { out.append(a) }
            increment(&current)
        }
        let warning = total > Double(count) ? "block holds \(total.isFinite ? String(Int(total)) : "2^\(hostBits)") addresses; only the first \(count) (the cap) are used" : nil
        return (out, warning)
    }

    private static func increment(_ bytes: inout [UInt8]) {
        var i = bytes.count - 1
        while i >= 0 {
            bytes[i] &+= 1
            if bytes[i] != 0 { return }
            i -= 1
        }
    }
}

extension Substring {
    func trimmingCharacters(in set: String) -> String {
        let chars = Set(set)
        var s = self[...]
        while let f = s.first, chars.contains(f) { s = s.dropFirst() }
        while let l = s.last, chars.contains(l) { s = s.dropLast() }
        return String(s)
    }
}

extension ResolverList {
    /// The four bytes of a dotted IPv4 address, nil for anything else.
    public static func v4Bytes(_ text: String) -> [UInt8]? {
        guard let b = ResolverAddress.parseAddress(text), b.count == 4 else { return nil }
        return b
    }
}
