/// An open-addressing index from 64-bit hashes to small non-negative integers (linear probing, grows at
/// half full, no deletion), for the per-packet lookups of resolvers, groups and domains: a Dictionary
/// would run SipHash over every key, which a lookup per packet cannot afford. Several entries may share
/// a hash; `find` asks the caller whether a candidate is the one it wants.
struct HashIndex {
    private var hashes: [UInt64]
    private var values: [Int32]  // -1: empty
    private var mask: Int
    private(set) var count = 0

    init(capacity: Int = 8) {
        var size = 16
        while size < capacity * 2 { size <<= 1 }
        hashes = [UInt64](repeating: 0, count: size)
        values = [Int32](repeating: -1, count: size)
        mask = size - 1
    }

    var isEmpty: Bool { count == 0 }

    /// The first value stored under `hash` that `matches` accepts.
    @inline(__always) func find(_ hash: UInt64, where matches: (Int32) -> Bool) -> Int32? {
        var i = Self.home(hash) & mask
        while true {
            let v = values[i]
            if v < 0 { return nil }
            if hashes[i] == hash, matches(v) { return v }
            i = (i + 1) & mask
        }
    }

    /// The value stored under `hash`, when the hash alone identifies the key.
    @inline(__always) func find(_ hash: UInt64) -> Int32? {
        find(hash, where: { _ in true })
    }

    mutating func insert(_ hash: UInt64, _ value: Int32) {
        precondition(value >= 0)
        if (count + 1) * 2 > values.count { grow() }
        var i = Self.home(hash) & mask
        while values[i] >= 0 { i = (i + 1) & mask }
        hashes[i] = hash
        values[i] = value
        count += 1
    }

    /// Hashes handed in need not be mixed (packed keys): fold the high bits into the slot number.
    @inline(__always) private static func home(_ hash: UInt64) -> Int {
        Int(truncatingIfNeeded: (hash &* 0x9e37_79b9_7f4a_7c15) >> 32)
    }

    private mutating func grow() {
        let oldHashes = hashes, oldValues = values
        hashes = [UInt64](repeating: 0, count: oldValues.count * 2)
        values = [Int32](repeating: -1, count: oldValues.count * 2)
        mask = values.count - 1
        for i in oldValues.indices where oldValues[i] >= 0 {
            var j = Self.home(oldHashes[i]) & mask
            while values[j] >= 0 { j = (j + 1) & mask }
            hashes[j] = oldHashes[i]
            values[j] = oldValues[i]
        }
    }
}
