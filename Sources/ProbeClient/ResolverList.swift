public import Base

/// Resolver lists as scanners take them: `ip`, `ip:port`, `[v6]:port`, bare IPv6, CIDR blocks (with a cap),
/// addresses that name their transport (`tcp://`, `tls://…#name`, `https://…/dns-query#name`: `ResolverTarget`),
/// `#` comments and blank lines (a `#` right after a `tls://` or `https://` address is its server
/// name, not a comment). A bad line is reported with its number and column and skipped. Overlapping and
/// repeated blocks are merged before they are expanded: only the part of a block that no earlier
/// block of the same family and port covered becomes addresses (1,000 lines of `0.0.0.0/0` once
/// took 32 s of one core to expand and deduplicate 65 million addresses).
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
    /// Addresses made from blocks so far (duplicates of earlier entries are never made): a list of
    /// 1,000 lines of `0.0.0.0/0` costs one block's worth, not 1,000.
    public private(set) var expandedAddresses = 0
    private var seen: Set<Endpoint> = []
    /// Ranges of blocks already expanded, per address family and port: sorted, disjoint, merged.
    private var covered: [CoverKey: [AddressRange]] = [:]
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

    /// Adds one entry (a `--resolver`); a block's part that earlier blocks covered is not expanded again.
    /// Returns the warning for a block cut at the cap.
    @discardableResult
    public mutating func add(entry: String, defaultPort: Int = 53, cidrCap: Int = defaultCIDRCap) throws(EntryError) -> String? {
        let (piece, warning) = try Self.piece(entry: entry, defaultPort: defaultPort, cidrCap: cidrCap)
        addUncovered(piece)
        return warning
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
            let (piece, warning) = try Self.piece(entry: entry, defaultPort: defaultPort, cidrCap: cidrCap)
            addUncovered(piece)
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
        let (piece, warning) = try piece(entry: entry, defaultPort: defaultPort, cidrCap: cidrCap)
        return (piece.range?.endpoints(v6: piece.key.v6, port: piece.key.port) ?? [], warning)
    }

    /// Consecutive addresses `first ... last` of one family, as 128-bit numbers (IPv4 in the low 32 bits).
    struct AddressRange: Hashable {
        var first: UInt128
        var last: UInt128

        func endpoints(v6: Bool, port: UInt16) -> [Endpoint] {
            var out: [Endpoint] = []
            out.reserveCapacity(Int(last - first) + 1)
            var value = first
            while true {
                let address: IPAddress = v6 ? .v6(UInt64(truncatingIfNeeded: value >> 64), UInt64(truncatingIfNeeded: value))
                                            : .v4(UInt32(truncatingIfNeeded: value))
                out.append(Endpoint(address: address, port: port))
                if value == last { return out }
                value += 1
            }
        }
    }

    struct CoverKey: Hashable {
        var v6: Bool
        var port: UInt16
    }

    /// A block (nil range: a cap of 0 left none of it) or a single address.
    typealias Piece = (key: CoverKey, range: AddressRange?)

    /// One entry as a range of addresses (a single address is a range of one), not yet expanded.
    static func piece(entry: String, defaultPort: Int,
                      cidrCap: Int) throws(EntryError) -> (piece: Piece, warning: String?) {
        let host: String, port: UInt16
        do {
            (host, port) = try Endpoint.split(entry, defaultPort: UInt16(clamping: defaultPort))
        } catch {
            throw EntryError(reason: error.description)
        }
        if let slash = host.firstIndex(of: "/") {
            let (v6, range, warning) = try cidr(address: String(host[..<slash]), prefix: String(host[host.index(after: slash)...]),
                                                cap: cidrCap)
            return ((CoverKey(v6: v6, port: port), range), warning)
        }
        guard let address = IPAddress(host) else { throw EntryError(reason: AddressError.notAnAddress.description) }
        let value = Self.number(address.bytes)
        return ((CoverKey(v6: address.isIPv6, port: port), AddressRange(first: value, last: value)), nil)
    }

    private static func number(_ bytes: [UInt8]) -> UInt128 {
        bytes.reduce(UInt128(0)) { $0 << 8 | UInt128($1) }
    }

    /// Expands the part of `piece` that no earlier block covered, then marks all of it covered.
    /// Single addresses are left to `seen` (a list of many of them would make the cover long).
    private mutating func addUncovered(_ piece: Piece) {
        guard let range = piece.range else { return }
        let key = piece.key
        guard range.first != range.last else {
            expandedAddresses += 1
            range.endpoints(v6: key.v6, port: key.port).forEach { add($0) }
            return
        }
        var cover = covered[key] ?? []
        // The first covered range that ends at or after the piece's start (binary search).
        var lo = 0, hi = cover.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if cover[mid].last < range.first { lo = mid + 1 } else { hi = mid }
        }
        var next = range.first
        var index = lo
        var done = false
        while !done {
            if index < cover.count, cover[index].first <= range.last {
                done = cover[index].last >= range.last
                if cover[index].first > next { expand(AddressRange(first: next, last: cover[index].first - 1), key) }
                if !done { next = cover[index].last + 1 }
                index += 1
            } else {
                expand(AddressRange(first: next, last: range.last), key)
                done = true
            }
        }
        // Merge the piece into the cover: every range it overlaps or touches becomes one.
        var first = range.first, last = range.last
        var start = lo
        if start > 0, cover[start - 1].last != UInt128.max, cover[start - 1].last + 1 == first { start -= 1 }
        var end = start
        while end < cover.count, last == .max || cover[end].first <= last + 1 {
            first = min(first, cover[end].first)
            last = max(last, cover[end].last)
            end += 1
        }
        cover.replaceSubrange(start..<end, with: [AddressRange(first: first, last: last)])
        covered[key] = cover
    }

    private mutating func expand(_ range: AddressRange, _ key: CoverKey) {
        let endpoints = range.endpoints(v6: key.v6, port: key.port)
        expandedAddresses += endpoints.count
        endpoints.forEach { add($0) }
    }

    /// A block as the range of its addresses: IPv4 blocks of /30 and larger skip the network and
    /// broadcast addresses; at most `cap` addresses from the first.
    private static func cidr(address: String, prefix: String,
                             cap: Int) throws(EntryError) -> (v6: Bool, range: AddressRange?, warning: String?) {
        guard let base = IPAddress(address)?.bytes else { throw EntryError(reason: "not an IP address") }
        let bits = base.count * 8
        guard let length = Int(prefix), (0...bits).contains(length) else {
            throw EntryError(reason: "prefix length '\(prefix)' out of range 0-\(bits)")
        }
        let hostBits = bits - length
        let skipEnds = base.count == 4 && hostBits >= 2
        let total: Double = hostBits >= 63 ? .infinity : Double(UInt64(1) << UInt64(hostBits)) - (skipEnds ? 2 : 0)
        let count = Int(min(total, Double(max(cap, 0))))
        let hostMask: UInt128 = hostBits == 128 ? .max : (UInt128(1) << UInt128(hostBits)) - 1
        let first = (number(base) & ~hostMask) + (skipEnds ? 1 : 0)
        let warning = total > Double(count) ? "block holds \(total.isFinite ? String(Int(total)) : "2^\(hostBits)") addresses; only the first \(count) (the cap) are used" : nil
        return (base.count == 16, count == 0 ? nil : AddressRange(first: first, last: first + UInt128(count - 1)), warning)
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
