/// The compression table of `WireWriter`: name suffixes already in the output and where.
///
/// Entries hold a length and a hash, not bytes; a candidate is confirmed by reading the output
/// itself (following the writer's own pointers), so only exact byte-equal suffixes match. Small
/// messages scan a short array without allocating a dictionary; large ones add a hash index.
internal struct SuffixTable {
    struct Key {
        /// Index of the suffix's first length octet in the name's storage.
        var start: Int
        /// Storage bytes from `start` to the end of the name.
        var length: Int
        /// FNV-1a over those bytes.
        var hash: UInt64

        static let emptyHash: UInt64 = 0xCBF2_9CE4_8422_2325
    }

    private struct Entry {
        var hash: UInt64
        var length: Int
        var offset: UInt16
    }

    private var entries: [Entry] = []
    /// Built once `entries` outgrows a linear scan; first writer of a hash wins.
    private var index: [UInt64: Int]?
    private static let linearLimit = 32

    mutating func insert(_ key: Key, offset: UInt16) {
        if entries.isEmpty { entries.reserveCapacity(16) }
        entries.append(Entry(hash: key.hash, length: key.length, offset: offset))
        if index != nil {
            let mixed = SuffixTable.mix(key)
            if index?[mixed] == nil { index?[mixed] = entries.count - 1 }
        } else if entries.count > SuffixTable.linearLimit {
            var built: [UInt64: Int] = [:]
            built.reserveCapacity(entries.count * 2)
            for (position, entry) in entries.enumerated().reversed() {
                built[SuffixTable.mix(hash: entry.hash, length: entry.length)] = position
            }
            index = built
        }
    }

    /// The message offset of a suffix equal to `name[key.start...]`, if one was written.
    func find(_ key: Key, name: UnsafeBufferPointer<UInt8>, in out: [UInt8], base: Int) -> Int? {
        if let index {
            guard let position = index[SuffixTable.mix(key)] else { return nil }
            let entry = entries[position]
            guard entry.length == key.length, entry.hash == key.hash,
                  SuffixTable.matches(name, from: key.start, out, at: base + Int(entry.offset), base: base)
            else { return nil }
            return Int(entry.offset)
        }
        for entry in entries where entry.hash == key.hash && entry.length == key.length {
            if SuffixTable.matches(name, from: key.start, out, at: base + Int(entry.offset), base: base) {
                return Int(entry.offset)
            }
        }
        return nil
    }

    private static func mix(_ key: Key) -> UInt64 {
        mix(hash: key.hash, length: key.length)
    }

    private static func mix(hash: UInt64, length: Int) -> UInt64 {
        hash ^ UInt64(truncatingIfNeeded: length) &* 0x9E37_79B9_7F4A_7C15
    }

    /// Compares the name bytes at `position` in our own output with `name[start...]`. The
    /// lengths already agree, so matching every label means the names are equal.
    private static func matches(_ name: UnsafeBufferPointer<UInt8>, from start: Int, _ out: [UInt8], at position: Int, base: Int) -> Bool {
        out.withUnsafeBufferPointer { written in
            var source = start
            var cursor = position
            while source < name.count {
                let length = written[cursor]
                if length & 0xC0 == 0xC0 {
                    cursor = base + (Int(length & 0x3F) << 8 | Int(written[cursor + 1]))
                    continue
                }
                for step in 0...Int(length) where name[source + step] != written[cursor + step] {
                    return false
                }
                source += Int(length) + 1
                cursor += Int(length) + 1
            }
            return true
        }
    }
}
