public import Base
/// RFC 4737 reordering metrics of one stream, from the sequence numbers in arrival order.
///
/// Pass first copies only: duplicates are counted elsewhere and never make a packet "in order".
public struct Reordering: Codable, Sendable, Hashable {
    /// Packets received (distinct sequence numbers).
    public var samples: Int
    /// Reordered packets (RFC 4737 section 3: seq < NextExp on arrival).
    public var reordered: Int
    /// Reordered / received, with its Wilson interval (RFC 4737 section 3.4 ratio).
    public var ratio: Proportion
    /// Largest reordering extent, nil when nothing was reordered.
    @NullCoded public var maxExtent: Int?
    /// Histogram of extents: extent -> packets.
    public var extents: [String: Int]
    /// RFC 4737 section 5 n-reordering with n = 3 (TCP's duplicate-ACK threshold).
    public var threeReordered: Int
    public var threeReorderedRatio: Proportion
    @NullCoded public var reason: String?

    public static let n = 3

    public init(arrivalOrder s: [UInt64]) {
        samples = s.count
        var nextExp: UInt64 = 0
        var started = false
        var reorderedCount = 0
        var extentHistogram: [Int: Int] = [:]
        var maxSeen: Int?
        var nCount = 0
        // Positions where the running maximum grows: their values increase, so the earliest arrival
        // with a larger seq than s[i] is found by binary search (RFC 4737 section 4.2 extent e = i - j).
        var recordValues: [UInt64] = []
        var recordPositions: [Int] = []
        for i in s.indices {
            let seq = s[i]
            if !started || seq >= nextExp {
                // RFC 4737 section 3.3: in order; NextExp = s + 1.
                started = true
                nextExp = seq &+ 1
            } else {
                reorderedCount += 1
                var lo = 0, hi = recordValues.count
                while lo < hi {
                    let mid = (lo + hi) / 2
                    if recordValues[mid] > seq { hi = mid } else { lo = mid + 1 }
                }
                if lo < recordPositions.count {
                    let extent = i - recordPositions[lo]
                    extentHistogram[extent, default: 0] += 1
                    maxSeen = max(maxSeen ?? 0, extent)
                }
                // RFC 4737 section 5: n-reordered iff the n arrivals just before it all carry larger seqs.
                if i >= Self.n, (i - Self.n..<i).allSatisfy({ s[$0] > seq }) { nCount += 1 }
            }
            if recordValues.last.map({ seq > $0 }) ?? true {
                recordValues.append(seq)
                recordPositions.append(i)
            }
        }
        reordered = reorderedCount
        ratio = Proportion(count: reorderedCount, samples: s.count)
        maxExtent = maxSeen
        extents = Dictionary(uniqueKeysWithValues: extentHistogram.map { (String($0.key), $0.value) })
        threeReordered = nCount
        threeReorderedRatio = Proportion(count: nCount, samples: s.count)
        reason = s.isEmpty ? "no packets received" : nil
    }
}

