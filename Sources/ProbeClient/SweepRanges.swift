public import Base
public import Results

/// IPv4 address ranges to sweep, as range lists come: one entry per line, `a.b.c.d/n` (CIDR),
/// `a.b.c.d-e.f.g.h` (inclusive, spaces around the dash allowed) or a single address; `#` starts a
/// comment; anything after the entry's first field (a comma, a tab, a space: country codes, counts)
/// is ignored. Overlapping entries are merged, so no address is in the sweep twice. A bad line is
/// an issue with its file and line number and is skipped.
///
/// Every address of a block is swept, network and broadcast addresses included (a block in a range
/// list need not be one subnet), and there is no cap: memory holds the merged blocks, not the
/// addresses. IPv6 entries (`x::y`, `[x::y]`, `x::/n`, `x::a-x::b`) are swept too, but only explicit
/// lists: an entry of more than `ipv6EntryCap` addresses (a prefix shorter than /112) is refused
/// (`refused`), since an exhaustive sweep of IPv6 space is not meaningful (a /64 alone is 2^64
/// addresses). In the sweep's index space the IPv4 addresses come first, then the IPv6 ones.
public struct SweepRanges: Sendable, Hashable {
    /// `count` consecutive addresses from `first` (count up to 2^32).
    public struct Block: Sendable, Hashable {
        public var first: UInt32
        public var count: UInt64
        public var last: UInt32 { UInt32(truncatingIfNeeded: UInt64(first) + count - 1) }

        public init(first: UInt32, count: UInt64) {
            self.first = first
            self.count = count
        }
    }

    /// `count` consecutive IPv6 addresses from `first` (count at most `ipv6EntryCap` per entry).
    public struct Block6: Sendable, Hashable {
        public var first: UInt128
        public var count: UInt64
        public var last: UInt128 { first &+ UInt128(count) &- 1 }

        public init(first: UInt128, count: UInt64) {
            self.first = first
            self.count = count
        }
    }

    /// One entry of a list.
    public enum Entry: Sendable, Hashable {
        case v4(Block)
        case v6(Block6)
    }

    /// The most IPv6 addresses one entry may give: a /112. A larger one refuses the sweep.
    public static let ipv6EntryCap: UInt64 = 65_536
    /// The most IPv6 addresses of one sweep (a probe names its IPv6 target by a 32-bit index).
    public static let ipv6TotalCap: UInt64 = 1 << 24

    public private(set) var blocks: [Block] = []
    /// Addresses before each block, for the index-to-address lookup.
    private var starts: [UInt64] = []
    public private(set) var blocks6: [Block6] = []
    private var starts6: [UInt64] = []
    public private(set) var issues: [ResolverList.Issue] = []
    /// Lines that refuse the sweep (an IPv6 entry beyond `ipv6EntryCap`); also in `issues`.
    public private(set) var refused: [ResolverList.Issue] = []
    /// IPv4 addresses: indexes 0 ..< ipv4Total (stored: the walk asks for each address).
    public private(set) var ipv4Total: UInt64 = 0
    /// IPv6 addresses: indexes ipv4Total ..< total.
    public private(set) var ipv6Total: UInt64 = 0
    public var total: UInt64 { ipv4Total + ipv6Total }

    public init() {}

    /// Parses a list file's bytes (LF or CRLF lines, an optional UTF-8 byte-order mark).
    public init(bytes: [UInt8], source: String) {
        var raw: [Block] = []
        var raw6: [Block6] = []
        var listed6: UInt64 = 0
        var number = 0
        var start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        while start <= bytes.count {
            let end = bytes[start...].firstIndex(of: 0x0A) ?? bytes.count
            number += 1
            var line = bytes[start..<end]
            if let hash = line.firstIndex(of: UInt8(ascii: "#")) { line = line[..<hash] }
            let text = String(decoding: line, as: UTF8.self)
            do throws(EntryFailure) {
                switch try Self.parseEntry(text) {
                case .v4(let block)?: raw.append(block)
                case .v6(let block)?:
                    guard listed6 + block.count <= Self.ipv6TotalCap else {
                        throw EntryFailure(reason: "the IPv6 entries up to here give more than \(Self.ipv6TotalCap) addresses, the most one sweep takes",
                                           refusesSweep: true)
                    }
                    raw6.append(block)
                    listed6 += block.count
                case nil: break
                }
            } catch {
                let issue = ResolverList.Issue(source: source, line: number,
                                               text: text[...].trimmingCharacters(in: " \t\r"), reason: error.reason)
                issues.append(issue)
                if error.refusesSweep { refused.append(issue) }
            }
            start = end + 1
        }
        set(raw)
        set6(raw6)
    }

    /// The given blocks, merged.
    public init(blocks: [Block], blocks6: [Block6] = []) {
        set(blocks)
        set6(blocks6)
    }

    /// Why an entry was not taken; `refusesSweep` for an IPv6 entry beyond the cap.
    public struct EntryFailure: Error, Sendable, Hashable {
        public var reason: String
        public var refusesSweep: Bool
    }

    private mutating func set6(_ raw: [Block6]) {
        (blocks6, starts6, ipv6Total) = Self.merge(raw)
    }

    /// Whether index `index` (0 ..< total) is an IPv6 address (`address6(at:)`) rather than IPv4.
    @inline(__always)
    public func isIPv6(index: UInt64) -> Bool { index >= ipv4Total }

    /// The IPv6 address at `index` (ipv4Total ..< total).
    public func address6(at index: UInt64) -> UInt128 {
        let i = index - ipv4Total
        var lo = 0, hi = starts6.count - 1
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            if starts6[mid] <= i { lo = mid } else { hi = mid - 1 }
        }
        return blocks6[lo].first &+ UInt128(i - starts6[lo])
    }

    /// The index of IPv6 `address` (the inverse of `address6(at:)`), nil when it is not in the ranges.
    public func index6(of address: UInt128) -> UInt64? {
        Self.offset(of: address, in: blocks6, starts: starts6).map { ipv4Total + $0 }
    }

    /// Where `address` is among the addresses of the sorted, disjoint `blocks`; nil when in none.
    private static func offset<B: MergeableBlock>(of address: B.Address, in blocks: [B], starts: [UInt64]) -> UInt64? {
        var lo = 0, hi = blocks.count - 1
        while lo <= hi {
            let mid = (lo + hi) / 2
            let b = blocks[mid]
            if address < b.first {
                hi = mid - 1
            } else if address > b.last {
                lo = mid + 1
            } else {
                return starts[mid] + UInt64(address - b.first)
            }
        }
        return nil
    }

    private mutating func set(_ raw: [Block]) {
        (blocks, starts, ipv4Total) = Self.merge(raw)
    }

    /// `raw` sorted and merged (overlapping or adjacent blocks joined), with the addresses before
    /// each block and in all. Block ends are compared as `last`, so a block at the top of the
    /// address space does not overflow.
    private static func merge<B: MergeableBlock>(_ raw: [B]) -> ([B], [UInt64], UInt64) {
        var merged: [B] = []
        for b in raw.sorted(by: { $0.first < $1.first }) {
            if let previous = merged.last, b.first <= previous.last || b.first - previous.last == 1 {
                let end = max(previous.last, b.last)
                merged[merged.count - 1].count = UInt64(end - previous.first) + 1
            } else {
                merged.append(b)
            }
        }
        var starts: [UInt64] = []
        var sum: UInt64 = 0
        for b in merged { starts.append(sum); sum += b.count }
        return (merged, starts, sum)
    }

    /// The address at `index` (0 ..< total) in block order.
    public func address(at index: UInt64) -> UInt32 {
        var lo = 0, hi = starts.count - 1
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            if starts[mid] <= index { lo = mid } else { hi = mid - 1 }
        }
        return UInt32(truncatingIfNeeded: UInt64(blocks[lo].first) + index - starts[lo])
    }

    /// The index of `address` (the inverse of `address(at:)`), nil when it is not in the ranges.
    public func index(of address: UInt32) -> UInt64? { Self.offset(of: address, in: blocks, starts: starts) }

    public func contains(_ address: UInt32) -> Bool {
        blocks.contains { address >= $0.first && UInt64(address) < UInt64($0.first) + $0.count }
    }

    /// One IPv4 entry (comment already removed): a block, nil for a blank line; an IPv6 entry is an error.
    public static func parse(entry raw: String) throws(ResolverList.EntryError) -> Block? {
        do throws(EntryFailure) {
            switch try parseEntry(raw) {
            case .v4(let block)?: return block
            case .v6?: throw EntryFailure(reason: "IPv6 where an IPv4 entry is wanted", refusesSweep: false)
            case nil: return nil
            }
        } catch {
            throw ResolverList.EntryError(reason: error.reason)
        }
    }

    /// One entry (comment already removed), IPv4 or IPv6: nil for a blank line.
    public static func parseEntry(_ raw: String) throws(EntryFailure) -> Entry? {
        var text = raw[...].trimmingCharacters(in: " \t\r")
        guard !text.isEmpty else { return nil }
        // "a - b" is one field; otherwise the entry is the first field.
        text = text.replacingDashSpaces()
        if let cut = text.firstIndex(where: { $0 == " " || $0 == "\t" || $0 == "," || $0 == ";" }) {
            text = String(text[..<cut])
        }
        if text.contains(":") { return .v6(try parse6(text)) }
        do {
            return .v4(try parse4(text))
        } catch {
            throw EntryFailure(reason: error.reason, refusesSweep: false)
        }
    }

    /// An IPv6 entry: `x::y`, `[x::y]`, `x::/n` (n at least 112) or `x::a-x::b` (at most `ipv6EntryCap` addresses).
    static func parse6(_ text: String) throws(EntryFailure) -> Block6 {
        func address(_ part: Substring) throws(EntryFailure) -> UInt128 {
            var body = part
            if body.hasPrefix("["), body.hasSuffix("]") { body = body.dropFirst().dropLast() }
            guard case .v6(let hi, let lo)? = IPAddress(body) else {
                throw EntryFailure(reason: "'\(part)' is not an IPv6 address", refusesSweep: false)
            }
            return UInt128(hi) << 64 | UInt128(lo)
        }
        let cap = ipv6EntryCap
        let capLength = 128 - cap.trailingZeroBitCount
        if let slash = text.firstIndex(of: "/") {
            let base = try address(text[..<slash])
            let lengthText = text[text.index(after: slash)...]
            guard let length = Int(lengthText), (0...128).contains(length) else {
                throw EntryFailure(reason: "IPv6 prefix length '\(lengthText)' out of range 0-128", refusesSweep: false)
            }
            guard length >= capLength else {
                throw EntryFailure(reason: "IPv6 /\(length) is 2^\(128 - length) addresses, beyond the cap of \(cap) (/\(capLength)): an exhaustive IPv6 sweep is not meaningful, list addresses or prefixes of /\(capLength) or longer",
                                   refusesSweep: true)
            }
            let size = UInt64(1) << UInt64(128 - length)
            return Block6(first: base & ~(UInt128(size) - 1), count: size)
        }
        if let dash = text.firstIndex(of: "-") {
            let a = try address(text[..<dash])
            let b = try address(text[text.index(after: dash)...])
            guard a <= b else { throw EntryFailure(reason: "range start is above its end", refusesSweep: false) }
            guard b - a < UInt128(cap) else {
                throw EntryFailure(reason: "IPv6 range of \(b - a + 1) addresses, beyond the cap of \(cap) (/\(capLength)): an exhaustive IPv6 sweep is not meaningful",
                                   refusesSweep: true)
            }
            return Block6(first: a, count: UInt64(b - a) + 1)
        }
        return Block6(first: try address(text[...]), count: 1)
    }

    static func parse4(_ text: String) throws(ResolverList.EntryError) -> Block {
        if let slash = text.firstIndex(of: "/") {
            guard let base = parseIPv4(text[..<slash]) else { throw notIPv4(String(text[..<slash])) }
            guard let length = Int(text[text.index(after: slash)...]), (0...32).contains(length) else {
                throw ResolverList.EntryError(reason: "prefix length '\(text[text.index(after: slash)...])' out of range 0-32")
            }
            let mask: UInt32 = length == 0 ? 0 : ~UInt32(0) << UInt32(32 - length)
            return Block(first: base & mask, count: UInt64(1) << UInt64(32 - length))
        }
        if let dash = text.firstIndex(of: "-") {
            guard let a = parseIPv4(text[..<dash]) else { throw notIPv4(String(text[..<dash])) }
            guard let b = parseIPv4(text[text.index(after: dash)...]) else { throw notIPv4(String(text[text.index(after: dash)...])) }
            guard a <= b else { throw ResolverList.EntryError(reason: "range start is above its end") }
            return Block(first: a, count: UInt64(b - a) + 1)
        }
        guard let a = parseIPv4(text[...]) else { throw notIPv4(text) }
        return Block(first: a, count: 1)
    }

    private static func notIPv4(_ text: String) -> ResolverList.EntryError {
        ResolverList.EntryError(reason: "'\(text)' is not an IPv4 address")
    }

    /// An IPv6 address of the sweep in the resolver form the reports and exports use: `[2001:db8::53]`.
    public static func describe6(_ address: UInt128) -> String {
        "[\(IPAddress.v6(UInt64(truncatingIfNeeded: address >> 64), UInt64(truncatingIfNeeded: address)))]"
    }

    /// A sweep address as written in its answers and exports (`192.0.2.1` or `[2001:db8::53]`); nil otherwise.
    public static func address(_ text: some StringProtocol) -> IPAddress? {
        var body = Substring(text)
        if body.hasPrefix("["), body.hasSuffix("]") { body = body.dropFirst().dropLast() }
        return IPAddress(body)
    }

    /// `address` in the form `address(_:)` reads: IPv6 in brackets.
    public static func describe(_ address: IPAddress) -> String {
        address.isIPv6 ? "[\(address)]" : address.description
    }

    /// Strict dotted quad: four decimal parts 0-255, no leading zeros beyond a single 0.
    public static func parseIPv4(_ text: Substring) -> UInt32? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var value: UInt32 = 0
        for p in parts {
            guard !p.isEmpty, p.count <= 3, p.allSatisfy({ $0.isASCII && $0.isNumber }),
                  p.count == 1 || p.first != "0", let n = UInt32(p), n <= 255 else { return nil }
            value = value << 8 | n
        }
        return value
    }

    public static func describe(_ address: UInt32) -> String {
        "\(address >> 24).\(address >> 16 & 0xFF).\(address >> 8 & 0xFF).\(address & 0xFF)"
    }
}

/// A block of consecutive addresses, IPv4 or IPv6, as `SweepRanges` merges them.
protocol MergeableBlock {
    associatedtype Address: FixedWidthInteger & UnsignedInteger
    var first: Address { get }
    var last: Address { get }
    var count: UInt64 { get set }
}

extension SweepRanges.Block: MergeableBlock {}
extension SweepRanges.Block6: MergeableBlock {}

extension String {
    fileprivate func replacingDashSpaces() -> String {
        guard contains("-") else { return self }
        var out = ""
        var pendingSpace = ""
        var afterDash = false
        for c in self {
            if c == " " || c == "\t" {
                if !afterDash { pendingSpace.append(c) }
                continue
            }
            if c == "-" {
                pendingSpace = ""
                afterDash = true
                out.append(c)
                continue
            }
            out += pendingSpace
            pendingSpace = ""
            afterDash = false
            out.append(c)
        }
        return out
    }
}

/// A seeded random permutation of 0 ..< count that needs no memory: a keyed 4-round Feistel
/// network on the smallest even number of bits that holds `count`, with cycle walking (values at or
/// above `count` are skipped). Position p of the walk is a plain counter, so a sweep is resumed by
/// its position alone. (ZMap walks a cyclic multiplicative group for the same reason; a Feistel
/// bijection gives the same flat memory with any seed and any count.)
public struct SweepPermutation: Sendable {
    public let count: UInt64
    public let seed: UInt64
    /// Half of the domain's bits; the domain is 0 ..< 2^(2 * half).
    let half: UInt64
    private let keys: [UInt64]

    public init(count: UInt64, seed: UInt64) {
        self.count = count
        self.seed = seed
        var bits: UInt64 = 2
        while bits < 64, UInt64(1) << bits < count { bits += 2 }
        half = bits / 2
        var rng = SplitMix64(seed: seed ^ 0x5357_4545_5050_4552)
        keys = (0..<4).map { _ in rng.next() }
    }

    /// Positions of the walk: 0 ..< domain; each maps to one distinct value or to none.
    public var domain: UInt64 { UInt64(1) << (2 * half) }

    /// The value at walk position `position`, nil when it falls outside 0 ..< count.
    public func value(at position: UInt64) -> UInt64? {
        let v = permute(position)
        return v < count ? v : nil
    }

    /// The walk position whose value is `value` (0 ..< count): the inverse of `value(at:)`.
    public func position(of value: UInt64) -> UInt64 {
        let mask = (UInt64(1) << half) - 1
        var left = value >> half & mask, right = value & mask
        for k in keys.reversed() {
            (left, right) = (right ^ (Self.round(left, k) & mask), left)
        }
        return left << half | right
    }

    private static func round(_ x: UInt64, _ k: UInt64) -> UInt64 {
        var z = x &+ k
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    func permute(_ x: UInt64) -> UInt64 {
        let mask = (UInt64(1) << half) - 1
        var left = x >> half & mask, right = x & mask
        for k in keys {
            (left, right) = (right, left ^ (Self.round(right, k) & mask))
        }
        return left << half | right
    }
}

/// A `--ranges` file read: the blocks it gives, what it was, and its bad lines (file:line).
public struct SweepRangeLoad: Sendable {
    public var blocks: [SweepRanges.Block]
    public var file: SweepRangeFile
    public var issues: [ResolverList.Issue]
    /// IPv6 blocks of a list (a delegated file gives none).
    public var blocks6: [SweepRanges.Block6] = []
    /// Lines that refuse the sweep (`SweepRanges.refused`).
    public var refused: [ResolverList.Issue] = []
}

extension SweepRanges {
    /// The status values of RIR delegated-extended statistics (the RIR statistics exchange format).
    static let delegatedStatuses: Set<String> = ["allocated", "assigned", "available", "reserved"]

    /// Reads one `--ranges` file: a delegated-extended statistics file when its first entry has `|`
    /// fields (then only the ipv4 records of `countries` are taken), otherwise a range list.
    /// `sha256` is the file's digest, computed by the caller from the same bytes.
    public static func load(bytes: [UInt8], source: String, sha256: String, countries: Set<String>) -> SweepRangeLoad {
        let lines = splitLines(bytes)
        let firstEntry = lines.first { !$0.text[...].trimmingCharacters(in: " \t\r").isEmpty && !$0.text.hasPrefix("#") }
        guard let firstEntry, firstEntry.text.contains("|") else {
            let list = SweepRanges(bytes: bytes, source: source)
            return SweepRangeLoad(blocks: list.blocks, file: SweepRangeFile(path: source, sha256: sha256, format: .list),
                                  issues: list.issues, blocks6: list.blocks6, refused: list.refused)
        }
        var blocks: [Block] = []
        var issues: [ResolverList.Issue] = []
        var taken: [String: [String]] = [:]
        for cc in countries { taken[cc] = [] }
        var other = 0, nonIPv4 = 0
        for line in lines {
            let text = line.text[...].trimmingCharacters(in: " \t\r")
            guard !text.isEmpty, !text.hasPrefix("#") else { continue }
            do throws(ResolverList.EntryError) {
                switch try parseDelegated(record: text) {
                case .header:
                    continue
                case .notIPv4:
                    nonIPv4 += 1
                case .ipv4(let cc, let block):
                    guard countries.contains(cc) else {
                        other += 1
                        continue
                    }
                    blocks.append(block)
                    taken[cc, default: []] += cidrs(of: block).map { "\(describe($0.first))/\($0.length)" }
                }
            } catch {
                issues.append(ResolverList.Issue(source: source, line: line.number, text: text, reason: error.reason))
            }
        }
        let file = SweepRangeFile(path: source, sha256: sha256, format: .delegated, countries: taken,
                                  otherCountryRecords: other, nonIPv4Records: nonIPv4)
        return SweepRangeLoad(blocks: blocks, file: file, issues: issues)
    }

    /// One line of a delegated file, parsed.
    public enum DelegatedRecord: Sendable, Hashable {
        /// The version line or a summary line (`registry|*|type|*|count|summary`).
        case header
        /// An asn or ipv6 record: a stateless sweep covers IPv4 only.
        case notIPv4
        /// An ipv4 record: the country code (upper case; empty for available space) and its addresses.
        case ipv4(country: String, block: Block)
    }

    /// A delegated-extended line: `registry|cc|type|start|value|date|status[|opaque-id[|extensions]]`
    /// (ipv4 `value` is an address count, not necessarily a power of two); the version line starts
    /// with its version number, a summary line has `summary` in its sixth field.
    public static func parseDelegated(record text: String) throws(ResolverList.EntryError) -> DelegatedRecord {
        let fields = text.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: " \t") }
        if let first = fields.first, let c = first.first, c.isASCII, c.isNumber { return .header }
        if fields.count >= 6, fields[5] == "summary" { return .header }
        guard fields.count >= 7 else {
            throw ResolverList.EntryError(reason: "a delegated record has 7 fields (registry|cc|type|start|value|date|status), this one \(fields.count)")
        }
        let type = fields[2].lowercased()
        guard type == "ipv4" else {
            if type == "ipv6" || type == "asn" { return .notIPv4 }
            throw ResolverList.EntryError(reason: "record type '\(fields[2])' is none of ipv4, ipv6, asn")
        }
        let cc = fields[1].uppercased()
        guard cc.isEmpty || (cc.count == 2 && cc.allSatisfy { $0.isASCII && $0.isLetter }) else {
            throw ResolverList.EntryError(reason: "country code '\(fields[1])' is not two letters")
        }
        guard let start = parseIPv4(fields[3][...]) else { throw ResolverList.EntryError(reason: "start '\(fields[3])' is not an IPv4 address") }
        guard let count = UInt64(fields[4]), count >= 1, count <= (UInt64(1) << 32) - UInt64(start) else {
            throw ResolverList.EntryError(reason: "address count '\(fields[4])' is not 1 to the end of the IPv4 space from \(fields[3])")
        }
        let date = fields[5]
        guard date.isEmpty || (date.count == 8 && date.allSatisfy { $0.isASCII && $0.isNumber }) else {
            throw ResolverList.EntryError(reason: "date '\(date)' is not YYYYMMDD")
        }
        guard delegatedStatuses.contains(fields[6].lowercased()) else {
            throw ResolverList.EntryError(reason: "status '\(fields[6])' is none of allocated, assigned, available, reserved")
        }
        return .ipv4(country: cc, block: Block(first: start, count: count))
    }

    /// The fewest CIDR blocks that cover `block` exactly (a count that is not a power of two, or a
    /// start not aligned to it, gives several).
    public static func cidrs(of block: Block) -> [(first: UInt32, length: Int)] {
        var out: [(first: UInt32, length: Int)] = []
        var first = UInt64(block.first)
        var left = block.count
        while left > 0 {
            // The largest power of two that the start is aligned to and that fits in what is left.
            var size: UInt64 = first == 0 ? UInt64(1) << 32 : first & (~first &+ 1)
            while size > left { size >>= 1 }
            out.append((UInt32(truncatingIfNeeded: first), 32 - size.trailingZeroBitCount))
            first += size
            left -= size
        }
        return out
    }

    static func splitLines(_ bytes: [UInt8]) -> [(number: Int, text: String)] {
        var out: [(number: Int, text: String)] = []
        var start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        var number = 0
        while start < bytes.count {
            let end = bytes[start...].firstIndex(of: 0x0A) ?? bytes.count
            number += 1
            out.append((number, String(decoding: bytes[start..<end], as: UTF8.self)))
            start = end + 1
        }
        return out
    }
}
