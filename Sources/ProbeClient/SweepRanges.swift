import Base

/// IPv4 address ranges to sweep, as range lists come: one entry per line, `a.b.c.d/n` (CIDR),
/// `a.b.c.d-e.f.g.h` (inclusive, spaces around the dash allowed) or a single address; `#` starts a
/// comment; anything after the entry's first field (a comma, a tab, a space: country codes, counts)
/// is ignored. Overlapping entries are merged, so no address is in the sweep twice. A bad line is
/// an issue with its file and line number and is skipped.
///
/// Every address of a block is swept, network and broadcast addresses included (a block in a range
/// list need not be one subnet), and there is no cap: memory holds the merged blocks, not the
/// addresses. IPv6 entries are issues: a stateless sweep of IPv6 space is not meaningful.
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

    public private(set) var blocks: [Block] = []
    /// Addresses before each block, for the index-to-address lookup.
    private var starts: [UInt64] = []
    public private(set) var issues: [ResolverList.Issue] = []
    public var total: UInt64 { (starts.last ?? 0) + (blocks.last?.count ?? 0) }

    public init() {}

    /// Parses a list file's bytes (LF or CRLF lines, an optional UTF-8 byte-order mark).
    public init(bytes: [UInt8], source: String) {
        var raw: [Block] = []
        var number = 0
        var start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        while start <= bytes.count {
            let end = bytes[start...].firstIndex(of: 0x0A) ?? bytes.count
            number += 1
            var line = bytes[start..<end]
            if let hash = line.firstIndex(of: UInt8(ascii: "#")) { line = line[..<hash] }
            let text = String(decoding: line, as: UTF8.self)
            do {
                if let block = try Self.parse(entry: text) { raw.append(block) }
            } catch {
                issues.append(ResolverList.Issue(source: source, line: number,
                                                 text: text[...].trimmingCharacters(in: " \t\r"), reason: error.reason))
            }
            start = end + 1
        }
        set(raw)
    }

    /// The given blocks, merged.
    public init(blocks: [Block]) { set(blocks) }

    private mutating func set(_ raw: [Block]) {
        var merged: [Block] = []
        for b in raw.sorted(by: { $0.first < $1.first }) {
            if let previous = merged.last, UInt64(b.first) <= UInt64(previous.first) + previous.count {
                let end = max(UInt64(previous.first) + previous.count, UInt64(b.first) + b.count)
                merged[merged.count - 1].count = end - UInt64(previous.first)
            } else {
                merged.append(b)
            }
        }
        blocks = merged
        starts = []
        var sum: UInt64 = 0
        for b in merged { starts.append(sum); sum += b.count }
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

    public func contains(_ address: UInt32) -> Bool {
        blocks.contains { address >= $0.first && UInt64(address) < UInt64($0.first) + $0.count }
    }

    /// One entry (comment already removed): a block, nil for a blank line.
    public static func parse(entry raw: String) throws(ResolverList.EntryError) -> Block? {
        var text = raw[...].trimmingCharacters(in: " \t\r")
        guard !text.isEmpty else { return nil }
        // "a - b" is one field; otherwise the entry is the first field.
        text = text.replacingDashSpaces()
        if let cut = text.firstIndex(where: { $0 == " " || $0 == "\t" || $0 == "," || $0 == ";" }) {
            text = String(text[..<cut])
        }
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
        if IPAddress(text)?.isIPv6 == true { return ResolverList.EntryError(reason: "IPv6 is not swept (IPv4 ranges only)") }
        return ResolverList.EntryError(reason: "'\(text)' is not an IPv4 address")
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

    func permute(_ x: UInt64) -> UInt64 {
        let mask = (UInt64(1) << half) - 1
        var left = x >> half & mask, right = x & mask
        for k in keys {
            var z = right &+ k
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            z ^= z >> 31
            (left, right) = (right, left ^ (z & mask))
        }
        return left << half | right
    }
}
