/// Groups query names by tunnel domain. A tunnel puts its data in long encoded labels under the
/// domain it is authoritative for, so the tunnel domain of a name is what follows its last label of
/// at least `encodedLabelMin` characters; once seen, that suffix also claims the short names under it
/// (polls, handshakes). Any other name falls back to its last two labels.
///
/// Names before the first long-labelled one of a tunnel are grouped by their last two labels: the
/// grouping is streaming and does not look ahead.
struct TunnelDomains {
    let encodedLabelMin: Int
    let maxDomains: Int
    private(set) var names: [String] = []
    private(set) var isTunnel: [Bool] = []
    private var bySuffixHash = HashIndex(capacity: 64)
    private var tunnelSuffixes = HashIndex(capacity: 64)
    private var otherID: Int32?
    // The previous tunnel name's domain: a tunnel's queries follow each other under one suffix.
    private var lastHash: UInt64 = 0
    private var lastID: Int32 = -1
    static let otherName = "(other domains)"

    init(encodedLabelMin: Int = 16, maxDomains: Int = 2048) {
        self.encodedLabelMin = encodedLabelMin
        self.maxDomains = maxDomains
    }

    /// The domain index for a scanned name (`labelStarts` as `scan` wrote them).
    mutating func domain(scan: DNSQuestionScan, labelStarts: UnsafeMutableBufferPointer<Int>) -> Int32 {
        let n = scan.labelCount
        if n == 0 { return intern(hash: scan.nameHash, start: 0, scan: scan, labelStarts: labelStarts, tunnel: false) }
        if scan.longestLabel >= encodedLabelMin {
            var last = -1
            for i in 0..<n where scan.labelLength(i, labelStarts: labelStarts) >= encodedLabelMin { last = i }
            let start = last + 1
            let hash = start < n ? scan.suffixHash(start, labelStarts: labelStarts) : DNSQuestionScan.mix(0, 0)
            if hash == lastHash, lastID >= 0 { return lastID }
            let id = intern(hash: hash, start: start, scan: scan, labelStarts: labelStarts, tunnel: true)
            if tunnelSuffixes.count < maxDomains, tunnelSuffixes.find(hash) == nil { tunnelSuffixes.insert(hash, id) }
            lastHash = hash
            lastID = id
            return id
        }
        if !tunnelSuffixes.isEmpty {
            for i in 0..<n {
                if let id = tunnelSuffixes.find(scan.suffixHash(i, labelStarts: labelStarts)) { return id }
            }
        }
        let start = max(0, n - 2)
        return intern(hash: scan.suffixHash(start, labelStarts: labelStarts), start: start, scan: scan, labelStarts: labelStarts,
                      tunnel: false)
    }

    /// The domain of a name whose domain is already known, from the hashes `prepareDomainHashes` left in
    /// `scan` (the same answer `domain` gives, without the name); nil when only `domain` can tell.
    mutating func knownDomain(_ scan: DNSQuestionScan) -> Int32? {
        if scan.labelCount == 0 { return bySuffixHash.find(scan.nameHash) }
        if scan.longestLabel >= encodedLabelMin {
            let hash = scan.tunnelSuffixHash
            if hash == lastHash, lastID >= 0 { return lastID }
            guard let id = bySuffixHash.find(hash) else { return nil }
            if !isTunnel[Int(id)] { isTunnel[Int(id)] = true }
            if tunnelSuffixes.count < maxDomains, tunnelSuffixes.find(hash) == nil { tunnelSuffixes.insert(hash, id) }
            lastHash = hash
            lastID = id
            return id
        }
        guard tunnelSuffixes.isEmpty else { return nil }
        return bySuffixHash.find(scan.shortSuffixHash)
    }

    private mutating func intern(
        hash: UInt64, start: Int, scan: DNSQuestionScan, labelStarts: UnsafeMutableBufferPointer<Int>, tunnel: Bool
    ) -> Int32 {
        if let id = bySuffixHash.find(hash) {
            if tunnel, !isTunnel[Int(id)] { isTunnel[Int(id)] = true }
            return id
        }
        if names.count >= maxDomains {
            if let otherID { return otherID }
            otherID = Int32(names.count)
            names.append(Self.otherName)
            isTunnel.append(false)
            return Int32(names.count - 1)
        }
        var labels: [String] = []
        for i in start..<scan.labelCount {
            let label = UnsafeRawBufferPointer(start: scan.name! + labelStarts[i] + 1, count: scan.labelLength(i, labelStarts: labelStarts))
            // Names compare case-insensitively (RFC 4343): the lower-cased form names the domain.
            let folded = label.map { $0 >= 0x41 && $0 <= 0x5a ? $0 | 0x20 : $0 }
            labels.append(String(decoding: folded, as: UTF8.self))
        }
        let id = Int32(names.count)
        bySuffixHash.insert(hash, id)
        names.append(labels.isEmpty ? "." : labels.joined(separator: "."))
        isTunnel.append(tunnel)
        return id
    }
}
