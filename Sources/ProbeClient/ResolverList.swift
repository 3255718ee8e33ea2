public import Base

/// Resolver lists as scanners take them: `ip`, `ip:port`, `[v6]:port`, bare IPv6, CIDR blocks (with a cap),
/// addresses that name their transport (`tcp://`, `tls://…#name`, `https://…/dns-query#name`: `ResolverTarget`),
/// `#` comments and blank lines (a `#` right after a `tls://` or `https://` address is its server
/// name, not a comment). A bad line is reported with its number and column and skipped.
public struct ResolverList: Sendable {
    public struct Issue: Hashable, Sendable, CustomStringConvertible {
        public var source: String
        public var line: Int
        public var text: String
        public var reason: String
        public var description: String { "\(source):\(line): \(reason): \(text)" }
    }

    public private(set) var resolvers: [Endpoint] = []
    public private(set) var issues: [Issue] = []
    private var seen: Set<Endpoint> = []
    /// The resolvers reached over TCP, TLS or HTTPS, by the endpoint the scan keys them by; a
    /// resolver not here is UDP.
    public private(set) var targets: [Endpoint: ResolverTarget] = [:]

    /// The target of `endpoint`: its stream transport, or UDP.
    public func target(of endpoint: Endpoint) -> ResolverTarget {
        targets[endpoint] ?? ResolverTarget(endpoint: endpoint)
    }

    /// Adds a resolver with its transport. The scan keys resolvers by address and port, so one
    /// endpoint takes one transport: a second transport for the same endpoint is refused.
    @discardableResult
    public mutating func add(_ target: ResolverTarget) -> String? {
        let current = self.target(of: target.endpoint)
        if seen.contains(target.endpoint), current != target {
            return "\(target.endpoint) is already listed as \(current); one transport per address and port"
        }
        if target.transport != .udp { targets[target.endpoint] = target }
        add(target.endpoint)
        return nil
    }

    public static let defaultCIDRCap = 65_536

    public init() {}

    public mutating func add(_ address: Endpoint) {
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
            if let hash = Self.commentStart(line) { line = line[..<hash] }
            addLine(line, number: number, source: source, defaultPort: defaultPort, cidrCap: cidrCap)
            start = end + 1
        }
    }

    /// Where a line's comment starts: the first `#`, except the one that follows a `tls://` or
    /// `https://` address without a blank (its server name); a `#` after a blank is a comment.
    static func commentStart(_ line: ArraySlice<UInt8>) -> ArraySlice<UInt8>.Index? {
        guard let first = line.firstIndex(of: UInt8(ascii: "#")) else { return nil }
        let head = String(decoding: line[..<first], as: UTF8.self)
        let lower = head.lowercased().drop { $0 == " " || $0 == "\t" }
        guard lower.hasPrefix("tls://") || lower.hasPrefix("https://"), !lower.contains(" "), !lower.contains("\t") else { return first }
        return line[line.index(after: first)...].firstIndex { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
            .flatMap { blank in line[blank...].firstIndex(of: UInt8(ascii: "#")) }
    }

    private mutating func addLine(_ line: ArraySlice<UInt8>, number: Int, source: String, defaultPort: Int, cidrCap: Int) {
        let raw = String(decoding: line, as: UTF8.self)
        let entry = raw[...].trimmingCharacters(in: " \t\r")
        if entry.contains("://") {
            do {
                if let clash = add(try ResolverTarget(parsing: entry)) {
                    issues.append(Issue(source: source, line: number, text: entry, reason: clash))
                }
            } catch {
                let offset = raw.prefix { $0 == " " || $0 == "\t" }.count
                var shifted = error
                shifted.column += offset
                issues.append(Issue(source: source, line: number, text: entry, reason: shifted.description))
            }
            return
        }
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
                             cidrCap: Int = defaultCIDRCap) throws(EntryError) -> ([Endpoint], String?) {
        let host: String, port: UInt16
        do {
            (host, port) = try Endpoint.split(entry, defaultPort: UInt16(clamping: defaultPort))
        } catch {
            throw EntryError(reason: error.description)
        }
        if let slash = host.firstIndex(of: "/") {
            return try cidr(address: String(host[..<slash]), prefix: String(host[host.index(after: slash)...]),
                            port: port, cap: cidrCap)
        }
        guard let address = IPAddress(host) else { throw EntryError(reason: AddressError.notAnAddress.description) }
        return ([Endpoint(address: address, port: port)], nil)
    }

    private static func cidr(address: String, prefix: String, port: UInt16,
                             cap: Int) throws(EntryError) -> ([Endpoint], String?) {
        guard let base = IPAddress(address)?.bytes else { throw EntryError(reason: "not an IP address") }
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
        var out: [Endpoint] = []
        out.reserveCapacity(count)
        var current = network
        if skipEnds { increment(&current) }
        for _ in 0..<count {
            if let a = IPAddress(bytes: current) { out.append(Endpoint(address: a, port: port)) }
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
