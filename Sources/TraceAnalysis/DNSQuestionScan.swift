/// The parts of a DNS message that transaction matching and grouping need, read in one pass without
/// allocating: header flags (RFC 1035 section 4.1.1) and the first question (section 4.1.2), its
/// name hashed case-insensitively (resolvers may echo 0x20-randomised case, RFC draft-vixie-dnsext-dns0x20).
/// The hash of a suffix of the name (tunnel-domain grouping) is computed when asked for (`suffixHash`):
/// a response needs none, a query of a known domain one.
struct DNSQuestionScan {
    static let maxLabels = 128

    var id: UInt16 = 0
    var flags: UInt16 = 0
    var questionCount: UInt16 = 0
    var qtype: UInt16 = 0
    var qclass: UInt16 = 0
    /// Number of labels in the question name (the root is 0).
    var labelCount = 0
    /// Hash of the whole name, lower-cased: `suffixHash(0)`.
    var nameHash: UInt64 = 0
    /// The name in wire form without its root octet, contiguous: in the message itself when it has no
    /// compression pointer, else copied into the caller's scratch buffer. Valid while both are.
    var name: UnsafeRawPointer?
    var nameLength = 0
    /// Bytes readable from `name` (whole-word loads may look past the name, never past this).
    var nameReadable = 0
    /// Length of the longest label, and the index of the last label at least `encodedLabelMin` long.
    var longestLabel = 0
    /// Filled by `prepareDomainHashes`: the hash of the suffix after the last label at least
    /// `encodedLabelMin` long (when there is one), and of the last two labels (TunnelDomains).
    var tunnelSuffixHash: UInt64 = 0
    var shortSuffixHash: UInt64 = 0

    var isResponse: Bool { flags & 0x8000 != 0 }
    var opcode: UInt16 { (flags >> 11) & 0x0f }
    var truncated: Bool { flags & 0x0200 != 0 }
    var rcode: UInt16 { flags & 0x000f }

    enum Failure: String, CaseIterable, Sendable {
        /// Shorter than the 12-byte header.
        case dnsTruncatedHeader
        /// QDCOUNT is zero: nothing to match on.
        case dnsNoQuestion
        /// The question name or its type/class runs past the end, loops or is too long.
        case dnsMalformedQuestion

        /// Position in `allCases`, for counting in an array.
        var index: Int {
            switch self {
            case .dnsTruncatedHeader: 0
            case .dnsNoQuestion: 1
            case .dnsMalformedQuestion: 2
            }
        }
    }

    /// The hash of the suffix of the name from label `i` on (`i == labelCount`: the root). `labelStarts`
    /// holds the offsets `scan` wrote.
    @inline(__always)
    func suffixHash(_ i: Int, labelStarts: UnsafeMutableBufferPointer<Int>) -> UInt64 {
        guard i < labelCount, let name else { return Self.rootHash }
        let start = labelStarts[i]
        return Self.hashLabel(UnsafeRawBufferPointer(start: name, count: nameReadable), at: start, count: nameLength - start)
    }

    static let rootHash: UInt64 = 0x243f_6a88_85a3_08d3

    /// The length of label `i`.
    @inline(__always)
    func labelLength(_ i: Int, labelStarts: UnsafeMutableBufferPointer<Int>) -> Int {
        Int(name!.load(fromByteOffset: labelStarts[i], as: UInt8.self))
    }

    /// Scans `bytes` in place. `labelStarts` receives, per label, the offset of its length octet in
    /// the contiguous name (`name`); `scratch` (256 bytes) holds the name when it is compressed.
    static func scan(
        _ bytes: UnsafeRawBufferPointer, scratch: UnsafeMutableRawBufferPointer,
        labelStarts: UnsafeMutableBufferPointer<Int>, into out: inout DNSQuestionScan
    ) -> Failure? {
        guard bytes.count >= 12 else { return .dnsTruncatedHeader }
        out.id = bytes.be16(0)
        out.flags = bytes.be16(2)
        out.questionCount = bytes.be16(4)
        guard out.questionCount > 0 else { return .dnsNoQuestion }
        // Walk the name, following compression pointers (RFC 1035 section 4.1.4), each of which must
        // point backwards; at most 255 octets in all (section 2.3.4).
        var position = 12
        var written = 0
        var labels = 0
        var end = -1  // where the question continues after the name
        var jumps = 0
        var longest = 0
        // (Wrapping arithmetic: every quantity here is bounded by the message's size, a label's 63
        // bytes or the name's 255; with the hash's, the checks of `+` were 13% of the scan's instructions.)
        while true {
            guard position < bytes.count else { return .dnsMalformedQuestion }
            let length = Int(bytes[position])
            if length == 0 {
                if end < 0 { end = position &+ 1 }
                break
            }
            if length & 0xc0 == 0xc0 {
                guard position &+ 1 < bytes.count else { return .dnsMalformedQuestion }
                let target = (length & 0x3f) << 8 | Int(bytes[position &+ 1])
                guard target < position, jumps < 64 else { return .dnsMalformedQuestion }
                if end < 0 { end = position &+ 2 }
                jumps &+= 1
                position = target
                continue
            }
            let step = 1 &+ length
            guard length <= 63, position &+ step <= bytes.count, written &+ step < 255,
                  labels < maxLabels else { return .dnsMalformedQuestion }
            if jumps > 0 {  // compressed: gather the labels after the first pointer behind the others
                (scratch.baseAddress! + written).copyMemory(from: bytes.baseAddress! + position, byteCount: step)
            }
            labelStarts[labels] = written
            labels &+= 1
            longest = max(longest, length)
            written &+= step
            position &+= step
        }
        guard end + 4 <= bytes.count else { return .dnsMalformedQuestion }
        out.qtype = bytes.be16(end)
        out.qclass = bytes.be16(end + 2)
        out.labelCount = labels
        out.longestLabel = longest
        out.nameLength = written
        if jumps == 0 {
            out.name = bytes.baseAddress.map { UnsafeRawPointer($0) + 12 }
            out.nameReadable = bytes.count - 12
        } else {
            // The labels before the first pointer are still only in the message: copy them too.
            var p = 12, w = 0
            while w < written, bytes[p] & 0xc0 != 0xc0 {
                let n = 1 + Int(bytes[p])
                UnsafeMutableRawBufferPointer(rebasing: scratch[w..<(w + n)])
                    .copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[p..<(p + n)]))
                p += n
                w += n
            }
            out.name = UnsafeRawPointer(scratch.baseAddress)
            out.nameReadable = scratch.count
        }
        out.nameHash = out.suffixHash(0, labelStarts: labelStarts)
        return nil
    }

    /// The suffix hashes `TunnelDomains.knownDomain` needs, so that the domain of a name is found
    /// again without the name itself.
    mutating func prepareDomainHashes(encodedLabelMin: Int, labelStarts: UnsafeMutableBufferPointer<Int>) {
        let n = labelCount
        guard n > 0 else { return }
        // `knownDomain` reads the tunnel suffix of a name with a long label, the last two labels of others.
        if longestLabel >= encodedLabelMin {
            var last = n - 1
            while labelLength(last, labelStarts: labelStarts) < encodedLabelMin { last -= 1 }
            let start = last + 1
            tunnelSuffixHash = start < n ? suffixHash(start, labelStarts: labelStarts) : Self.mix(0, 0)
        } else {
            shortSuffixHash = suffixHash(max(0, n - 2), labelStarts: labelStarts)
        }
    }

    /// The hash of `count` bytes at `offset` (a label with its length octet), ASCII upper case folded
    /// to lower case in registers (RFC 4343), sixteen bytes per step (not for adversarial
    /// keys: the tables it keys hold at most what one capture brings).
    @inline(__always)
    static func hashLabel(_ b: UnsafeRawBufferPointer, at offset: Int, count: Int) -> UInt64 {
        // (Wrapping arithmetic on the offsets: a name is at most 255 bytes.)
        var h: UInt64 = 0x9e37_79b9_7f4a_7c15 ^ UInt64(count)
        var i = 0
        // Sixteen bytes per multiplication (both halves in one 64x64-bit product, folded). The product
        // does not depend on the hash so far: the steps' multiplications overlap, and only a rotation
        // and an exclusive or chain them (the position of a block still counts). When the product took
        // the running hash, each 16 bytes waited for the last multiplication: the chain was half of
        // the question scan's time (issue 27 item 5, docs/TRACE.md).
        while i &+ 16 <= count {
            let a = lowercased(b.loadUnaligned(fromByteOffset: offset &+ i, as: UInt64.self))
            let c = lowercased(b.loadUnaligned(fromByteOffset: offset &+ i &+ 8, as: UInt64.self))
            let product = (a ^ 0xa076_1d64_78bd_642f).multipliedFullWidth(by: c ^ 0xe703_7ed1_a0b4_28db)
            h = (h << 29 | h >> 35) ^ product.high ^ product.low
            i &+= 16
        }
        if i &+ 8 <= count {
            h = mix(h, lowercased(b.loadUnaligned(fromByteOffset: offset &+ i, as: UInt64.self)))
            i &+= 8
        }
        let rest = count &- i
        var tail: UInt64 = 0
        if rest > 0 {
            if offset &+ i &+ 8 <= b.count {  // one load, the bytes past the label masked off (little-endian)
                tail = lowercased(b.loadUnaligned(fromByteOffset: offset &+ i, as: UInt64.self)) & (~UInt64(0) >> UInt64(64 &- 8 &* rest))
            } else {
                var shift: UInt64 = 0
                while i < count {
                    tail |= UInt64(b[offset &+ i]) << shift
                    shift &+= 8
                    i &+= 1
                }
                tail = lowercased(tail)
            }
        }
        return mix(h, tail)
    }

    /// ASCII A-Z to a-z in the eight bytes of `x` (SWAR: the high bit of each byte marks a letter).
    @inline(__always) static func lowercased(_ x: UInt64) -> UInt64 {
        let low = x & 0x7f7f_7f7f_7f7f_7f7f
        let atLeastA = low &+ 0x3f3f_3f3f_3f3f_3f3f  // high bit set where byte >= 0x41
        let aboveZ = low &+ 0x2525_2525_2525_2525  // high bit set where byte >= 0x5b
        let upper = atLeastA & ~aboveZ & ~x & 0x8080_8080_8080_8080
        return x | (upper >> 2)
    }

    @inline(__always) static func mix(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let product = (a ^ b).multipliedFullWidth(by: 0xa076_1d64_78bd_642f)
        return product.high ^ product.low &+ 0xe703_7ed1_a0b4_28db
    }
}

extension UnsafeRawBufferPointer {
    @inline(__always) func be16(_ offset: Int) -> UInt16 {
        UInt16(self[offset]) << 8 | UInt16(self[offset + 1])
    }
}
