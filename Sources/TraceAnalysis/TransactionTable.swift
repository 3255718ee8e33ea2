import Base
import Capture
import CPrefetch

/// A transaction's identity: client address and port, resolver, DNS id, question (name hash, type),
/// packed into four integers (32 bytes) so that comparing two keys is four integer compares.
struct TransactionKey: Hashable {
    /// Resolver indexes fit in 15 bits of `fields` (TraceFrontEnd keeps at most this many resolvers).
    static let maxResolvers = 1 << 15

    /// The client address: IPv6 as its two halves; IPv4 in `addressLow` (the version is in `fields`).
    var addressHigh: UInt64 = 0
    var addressLow: UInt64 = 0
    /// Client port << 48 | DNS id << 32 | qtype << 16 | resolver << 1 | 1 for IPv6.
    var fields: UInt64 = 0
    var name: UInt64 = 0

    init() {}

    var resolver: Int32 { Int32(truncatingIfNeeded: (fields & 0xffff) >> 1) }
    var qtype: UInt16 { UInt16(truncatingIfNeeded: fields >> 16) }

    init(client: IPAddress, clientPort: UInt16, id: UInt16, resolver: Int32, qtype: UInt16, name: UInt64) {
        precondition(resolver >= 0 && Int(resolver) < Self.maxResolvers)
        let v6: UInt64
        switch client {
        case .v4(let a):
            addressLow = UInt64(a)
            v6 = 0
        case .v6(let hi, let lo):
            addressHigh = hi
            addressLow = lo
            v6 = 1
        }
        fields = UInt64(clientPort) << 48 | UInt64(id) << 32 | UInt64(qtype) << 16 | UInt64(resolver) << 1 | v6
        self.name = name
    }

    /// A 64-bit hash from the fields (the name is already hashed): one multiplication, no hasher
    /// set-up. Equal hashes only cost a key comparison: the index compares whole keys.
    var hash: UInt64 {
        DNSQuestionScan.mix(name ^ fields.rotated(17), addressLow ^ addressHigh &* 0x9e37_79b9_7f4a_7c15)
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(hash)
    }
}

/// A transaction between its query and the end of its windows.
struct Transaction {
    enum State: UInt8 {
        case pending
        case answered
        /// No response within Tmax (RFC 7680 loss), still in the late window.
        case lost
        /// Lost, and its response came late.
        case late
    }

    var sent: Int64
    var group: Int32
    var resolverSequence: UInt32
    var groupSequence: UInt32
    var fate: Int32
    var state: State = .pending
}

/// The transactions inside their Tmax window, in send order (a ring: queries arrive at the tail,
/// the window closes at the head, responses touch recent entries), indexed by an open-addressing
/// table of 8-byte (tag, serial) words: linear probing, backward-shift deletion. Memory follows the
/// number of queries sent within Tmax, never the capture.
struct TransactionWindow {
    /// 64 bytes: a cache line (the hash is recomputed from the key when needed, the serial is the position).
    struct Entry {
        var key: TransactionKey
        var transaction: Transaction
        /// False once a new transaction reused the key (the entry then only waits to leave the ring).
        var indexed = true
    }

    /// The index: one 64-bit word per slot, 0 when empty, else `tag << 32 | serial` (low 32 bits). The
    /// tag is the hash's high half with its lowest bit set (never 0), and names the slot's home too,
    /// so probing and deletion read nothing but the index (8 bytes a slot: a dense, cache-friendly
    /// table). A tag match is confirmed against the key in the ring.
    private var slots: [UInt64]
    private var mask: Int
    /// The transactions in send order: a ring of `ringMask + 1` entries (a power of two, doubled when
    /// full) in raw memory, `count` of them from `head`. Plain fields: the per-event code indexes it
    /// without the bounds, uniqueness and wrap checks of a Deque. `memory` owns it (`own()`).
    private var memory: RingMemory<Entry>
    private var ring: UnsafeMutablePointer<Entry>
    private var ringMask: Int
    private var head = 0
    private(set) var count = 0
    /// Serial of the oldest entry; serials are consecutive along the ring.
    private var base: UInt64 = 1
    private(set) var indexedCount = 0
    /// The oldest transactions' index slots were prefetched up to this serial (`prefetchOldest`).
    private var oldestPrefetched: UInt64 = 1

    init(capacity: Int = 1024) {
        var size = 16
        while size < capacity * 2 { size <<= 1 }
        slots = [UInt64](repeating: 0, count: size)
        mask = size - 1
        // Reserved at its working size (Tmax 5 s at 20,000 queries per second: about 100,000): the
        // pages are only touched as the ring fills, and growing by doubling from a small ring copied
        // every entry eleven times over and faulted in twice the memory (bench-trace.sh).
        memory = RingMemory(capacity: Self.reservedEntries)
        ring = memory.elements
        ringMask = Self.reservedEntries - 1
    }

    /// 131,072 entries of 64 bytes: 8 MiB of address space, resident only as far as it is used.
    static let reservedEntries = 1 << 17

    /// Makes the ring this window's own when a copy of the window shares it (value semantics: call
    /// before a run of changes on a copy that may not be the only one).
    mutating func own() {
        guard !isKnownUniquelyReferenced(&memory) else { return }
        // Only the entries in the window: the rest of the reserved ring was never touched.
        let copy = RingMemory<Entry>(capacity: ringMask + 1)
        for k in 0..<count { (copy.elements + ((head + k) & ringMask)).initialize(to: at(k).pointee) }
        memory = copy
        ring = memory.elements
    }

    /// The entry `k` places after the oldest.
    @inline(__always) private func at(_ k: Int) -> UnsafeMutablePointer<Entry> {
        ring + ((head + k) & ringMask)
    }

    var nextSerial: UInt64 { base + UInt64(count) }
    /// The send time of the oldest transaction.
    var oldestSent: Int64? { count > 0 ? ring[head].transaction.sent : nil }

    @inline(__always) private static func tag(_ hash: UInt64) -> UInt64 { hash >> 32 | 1 }
    @inline(__always) private func home(tag: UInt64) -> Int { Int(truncatingIfNeeded: tag >> 1) & mask }
    /// The full serial of a slot's low 32 bits: the ring holds fewer than 2^32 transactions.
    @inline(__always) private func serial(_ word: UInt64) -> UInt64 {
        base &+ UInt64(UInt32(truncatingIfNeeded: word) &- UInt32(truncatingIfNeeded: base))
    }

    /// Asks for the index slot a lookup of `hash` starts at, so that it is on its way to the cache
    /// before the lookup needs it (the caller knows upcoming hashes a few events ahead). A prefetch,
    /// not a load: nothing waits for it.
    @inline(__always) func prefetch(_ hash: UInt64) {
        slots.withUnsafeBufferPointer { tunnelprobe_prefetch($0.baseAddress! + home(tag: Self.tag(hash))) }
    }

    /// The same for the index slots of the `ahead` oldest transactions (the next to leave, whose
    /// slots `removeOldest` empties), each asked for once.
    @inline(__always) mutating func prefetchOldest(ahead: Int) {
        if oldestPrefetched < base { oldestPrefetched = base }
        let limit = min(base &+ UInt64(ahead), nextSerial)
        while oldestPrefetched < limit {
            let entry = at(Int(truncatingIfNeeded: oldestPrefetched &- base))
            if entry.pointee.indexed { prefetch(entry.pointee.key.hash) }
            oldestPrefetched += 1
        }
    }

    /// The serial of the transaction with this key, if it is in the window.
    func find(_ key: TransactionKey, hash: UInt64) -> UInt64? {
        let tag = Self.tag(hash)
        return slots.withUnsafeBufferPointer { slots in
            var i = home(tag: tag)
            while true {
                let word = slots[i]
                if word == 0 { return nil }
                if word >> 32 == tag {
                    let serial = serial(word)
                    if at(Int(truncatingIfNeeded: serial &- base)).pointee.key == key { return serial }
                }
                i = (i + 1) & mask
            }
        }
    }

    subscript(serial: UInt64) -> Transaction {
        get { at(Int(truncatingIfNeeded: serial &- base)).pointee.transaction }
        set { at(Int(truncatingIfNeeded: serial &- base)).pointee.transaction = newValue }
    }

    /// Appends a transaction (its serial is `nextSerial`) and indexes it.
    mutating func append(_ key: TransactionKey, hash: UInt64, _ transaction: Transaction) {
        if (indexedCount + 1) * 2 > slots.count { grow() }
        let tag = Self.tag(hash)
        var i = home(tag: tag)
        let mask = mask, word = tag << 32 | (nextSerial & 0xffff_ffff)
        slots.withUnsafeMutableBufferPointer { slots in
            while slots[i] != 0 { i = (i + 1) & mask }
            slots[i] = word
        }
        indexedCount += 1
        if count > ringMask { growRing() }
        at(count).initialize(to: Entry(key: key, transaction: transaction))
        count += 1
    }

    /// Doubles the ring, the entries keeping their order from index 0.
    private mutating func growRing() {
        let bigger = RingMemory<Entry>(capacity: (ringMask + 1) * 2)
        for k in 0..<count { (bigger.elements + k).initialize(to: at(k).pointee) }
        memory = bigger
        ring = bigger.elements
        ringMask = bigger.capacity - 1
        head = 0
    }

    /// Takes the oldest transaction out of the window and the index; returns it with its serial.
    mutating func removeOldest() -> (entry: Entry, serial: UInt64)? {
        guard count > 0 else { return nil }
        let entry = ring[head]
        head = (head + 1) & ringMask
        count -= 1
        let serial = base
        if entry.indexed { unindex(hash: entry.key.hash, serial: serial) }
        base += 1
        return (entry, serial)
    }

    /// The transaction `k` places after the oldest (`k < count`).
    func entry(_ k: Int) -> Entry {
        precondition(k >= 0 && k < count)
        return at(k).pointee
    }

    /// Empties the window and the index.
    mutating func removeAll() {
        base += UInt64(count)
        head = 0
        count = 0
        slots = [UInt64](repeating: 0, count: 16)
        mask = 15
        indexedCount = 0
    }

    /// Drops a transaction from the index (a new one reuses its key); it leaves the ring in its turn.
    mutating func retire(_ serial: UInt64) {
        let entry = at(Int(truncatingIfNeeded: serial &- base))
        guard entry.pointee.indexed else { return }
        entry.pointee.indexed = false
        unindex(hash: entry.pointee.key.hash, serial: serial)
    }

    private mutating func unindex(hash: UInt64, serial: UInt64) {
        let tag = Self.tag(hash)
        let word = tag << 32 | (serial & 0xffff_ffff)
        let mask = mask
        var hole = home(tag: tag)
        let found = slots.withUnsafeMutableBufferPointer { slots in
            while slots[hole] != word {
                guard slots[hole] != 0 else { return false }
                hole = (hole + 1) & mask
            }
            // Backward-shift deletion (linear probing): pull later entries of the run into the hole.
            var j = hole
            while true {
                j = (j + 1) & mask
                let next = slots[j]
                guard next != 0 else { break }
                let home = Int(truncatingIfNeeded: next >> 33) & mask
                // The entry at j may move into the hole unless its home lies cyclically in (hole, j].
                let stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j)
                if !stays {
                    slots[hole] = next
                    hole = j
                }
            }
            slots[hole] = 0
            return true
        }
        if found { indexedCount -= 1 }
    }

    private mutating func grow() {
        let old = slots
        slots = [UInt64](repeating: 0, count: old.count * 2)
        mask = slots.count - 1
        let mask = mask
        slots.withUnsafeMutableBufferPointer { slots in
            for word in old where word != 0 {
                var i = Int(truncatingIfNeeded: word >> 33) & mask
                while slots[i] != 0 { i = (i + 1) & mask }
                slots[i] = word
            }
        }
    }
}

extension UInt64 {
    @inline(__always) func rotated(_ n: UInt64) -> UInt64 { self << n | self >> (64 - n) }
}
