/// The parts of a DNS message that transaction matching and grouping need, read in one pass without
/// allocating: header flags (RFC 1035 section 4.1.1) and the first question (section 4.1.2), its
/// name hashed case-insensitively (resolvers may echo 0x20-randomised case, RFC draft-vixie-dnsext-dns0x20)
/// label by label, so that every suffix of the name has a hash too (tunnel-domain grouping).
struct DNSQuestionScan {
    static let maxLabels = 128

    var id: UInt16 = 0
    var flags: UInt16 = 0
    var questionCount: UInt16 = 0
    var qtype: UInt16 = 0
    var qclass: UInt16 = 0
    /// Number of labels in the question name (the root is 0).
    var labelCount = 0
    /// Hash of the whole name, lower-cased.
    var nameHash: UInt64 = 0
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
    }

    /// Scans `bytes`. `labels` receives, per label, its offset in `name` (lower-cased wire form of the
    /// name, length octets included) and the hash of the suffix starting at that label.
    static func scan(
        _ bytes: UnsafeRawBufferPointer, name: UnsafeMutableRawBufferPointer,
        suffixHashes: UnsafeMutableBufferPointer<UInt64>, labelStarts: UnsafeMutableBufferPointer<Int>,
        into out: inout DNSQuestionScan
    ) -> Failure? {
        guard bytes.count >= 12 else { return .dnsTruncatedHeader }
        out.id = bytes.be16(0)
        out.flags = bytes.be16(2)
        out.questionCount = bytes.be16(4)
        guard out.questionCount > 0 else { return .dnsNoQuestion }
        // Copy the name in wire form, following compression pointers (RFC 1035 section 4.1.4), each
        // of which must point backwards; at most 255 octets in all (section 2.3.4).
        var position = 12
        var written = 0
        var labels = 0
        var end = -1  // where the question continues after the name
        var jumps = 0
        var longest = 0
        while true {
            guard position < bytes.count else { return .dnsMalformedQuestion }
            let length = Int(bytes[position])
            if length == 0 {
                if end < 0 { end = position + 1 }
                break
            }
            if length & 0xc0 == 0xc0 {
                guard position + 1 < bytes.count else { return .dnsMalformedQuestion }
                let target = (length & 0x3f) << 8 | Int(bytes[position + 1])
                guard target < position, jumps < 64 else { return .dnsMalformedQuestion }
                if end < 0 { end = position + 2 }
                jumps += 1
                position = target
                continue
            }
            guard length <= 63, position + 1 + length <= bytes.count, written + 1 + length < 255,
                  labels < maxLabels else { return .dnsMalformedQuestion }
            labelStarts[labels] = written
            labels += 1
            longest = max(longest, length)
            UnsafeMutableRawBufferPointer(rebasing: name[written..<(written + 1 + length)])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[position..<(position + 1 + length)]))
            written += 1 + length
            position += 1 + length
        }
        guard end + 4 <= bytes.count else { return .dnsMalformedQuestion }
        out.qtype = bytes.be16(end)
        out.qclass = bytes.be16(end + 2)
        out.labelCount = labels
        out.longestLabel = longest
        lowercaseASCII(UnsafeMutableRawBufferPointer(rebasing: name[0..<written]))
        // Suffix hashes from the right: suffix(i) = mix(hash(label i), suffix(i + 1)).
        var suffix: UInt64 = 0x243f_6a88_85a3_08d3
        var upper = written
        var i = labels - 1
        while i >= 0 {
            let start = labelStarts[i]
            suffix = mix(hashBytes(UnsafeRawBufferPointer(rebasing: name[start..<upper])), suffix)
            suffixHashes[i] = suffix
            upper = start
            i -= 1
        }
        out.nameHash = labels == 0 ? suffix : suffixHashes[0]
        labelStarts[labels] = written
        return nil
    }

    /// The suffix hashes `TunnelDomains.knownDomain` needs, from the buffers `scan` just filled, so that
    /// the domain of a name is found again without the name itself.
    mutating func prepareDomainHashes(
        encodedLabelMin: Int, name: UnsafeMutableRawBufferPointer,
        suffixHashes: UnsafeMutableBufferPointer<UInt64>, labelStarts: UnsafeMutableBufferPointer<Int>
    ) {
        let n = labelCount
        guard n > 0 else { return }
        if longestLabel >= encodedLabelMin {
            var last = -1
            for i in 0..<n where Int(name[labelStarts[i]]) >= encodedLabelMin { last = i }
            let start = last + 1
            tunnelSuffixHash = start < n ? suffixHashes[start] : Self.mix(0, 0)
        }
        shortSuffixHash = suffixHashes[max(0, n - 2)]
    }

    /// ASCII A-Z to a-z eight bytes at a time (RFC 4343: DNS names compare case-insensitively). Label
    /// length octets are at most 63, below "A", so the wire form can be folded whole.
    static func lowercaseASCII(_ b: UnsafeMutableRawBufferPointer) {
        var i = 0
        while i + 8 <= b.count {
            let x = b.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            let low = x & 0x7f7f_7f7f_7f7f_7f7f
            let atLeastA = low &+ 0x3f3f_3f3f_3f3f_3f3f  // high bit set where byte >= 0x41
            let aboveZ = low &+ 0x2525_2525_2525_2525  // high bit set where byte >= 0x5b
            let upper = atLeastA & ~aboveZ & ~x & 0x8080_8080_8080_8080
            b.storeBytes(of: x | (upper >> 2), toByteOffset: i, as: UInt64.self)
            i += 8
        }
        while i < b.count {
            let c = b[i]
            if c >= 0x41 && c <= 0x5a { b[i] = c | 0x20 }
            i += 1
        }
    }

    /// A fast 64-bit hash of a short byte string (eight bytes per step, length folded in). Not for
    /// adversarial keys: the tables it keys hold at most what one capture brings.
    static func hashBytes(_ b: UnsafeRawBufferPointer) -> UInt64 {
        var h: UInt64 = 0x9e37_79b9_7f4a_7c15 ^ UInt64(b.count)
        var i = 0
        while i + 8 <= b.count {
            h = mix(h, b.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            i += 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while i < b.count {
            tail |= UInt64(b[i]) << shift
            shift += 8
            i += 1
        }
        return mix(h, tail)
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

/// The buffers one question scan writes into, allocated once per analyzer.
final class QuestionScratch: @unchecked Sendable {
    let name = UnsafeMutableRawBufferPointer.allocate(byteCount: 256, alignment: 8)
    let suffixHashes = UnsafeMutableBufferPointer<UInt64>.allocate(capacity: DNSQuestionScan.maxLabels + 1)
    let labelStarts = UnsafeMutableBufferPointer<Int>.allocate(capacity: DNSQuestionScan.maxLabels + 1)

    init() {
        name.initializeMemory(as: UInt8.self, repeating: 0)
        suffixHashes.initialize(repeating: 0)
        labelStarts.initialize(repeating: 0)
    }

    deinit {
        name.deallocate()
        suffixHashes.deallocate()
        labelStarts.deallocate()
    }
}
