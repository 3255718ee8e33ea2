import Capture
import DequeModule

/// A transaction's identity: client address and port, resolver, DNS id, question (name hash, type).
struct TransactionKey: Hashable {
    var client: IPAddress
    var clientPort: UInt16
    var id: UInt16
    var resolver: Int32
    var qtype: UInt16
    var name: UInt64

    /// A 64-bit hash from the fields (the name is already hashed): no per-lookup hasher set-up,
    /// which a table touched twice per packet cannot afford.
    var hash: UInt64 {
        let address: UInt64
        switch client {
        case .v4(let a): address = UInt64(a)
        case .v6(let hi, let lo): address = DNSQuestionScan.mix(hi, lo)
        }
        let packed = UInt64(clientPort) << 48 | UInt64(id) << 32 | UInt64(qtype) << 16 | UInt64(UInt16(truncatingIfNeeded: resolver))
        return DNSQuestionScan.mix(DNSQuestionScan.mix(name, packed), address ^ UInt64(UInt32(bitPattern: resolver)) << 32)
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

    var serial: UInt64
    var sent: Int64
    var group: Int32
    var resolverSequence: UInt32
    var groupSequence: UInt32
    var fate: Int32
    var state: State = .pending
}

/// The transactions inside their Tmax window, in send order (a ring: queries arrive at the tail,
/// the window closes at the head, responses touch recent entries), indexed by a small open-addressing
/// hash table of (hash, serial) pairs: linear probing, backward-shift deletion. Memory follows the
/// number of queries sent within Tmax, never the capture.
struct TransactionWindow {
    struct Entry {
        var key: TransactionKey
        var hash: UInt64
        var transaction: Transaction
        /// False once a new transaction reused the key (the entry then only waits to leave the ring).
        var indexed = true
    }

    private struct Slot {
        var hash: UInt64 = 0
        var serial: UInt64 = 0  // 0: empty
    }

    private var ring = Deque<Entry>()
    /// Serial of `ring.first`; serials are consecutive along the ring.
    private var base: UInt64 = 1
    private var slots: [Slot]
    private var mask: Int
    private(set) var indexedCount = 0

    init(capacity: Int = 1024) {
        var size = 16
        while size < capacity * 2 { size <<= 1 }
        slots = [Slot](repeating: Slot(), count: size)
        mask = size - 1
    }

    var count: Int { ring.count }
    var nextSerial: UInt64 { base + UInt64(ring.count) }
    var oldest: Entry? { ring.first }

    /// The serial of the transaction with this key, if it is in the window.
    func find(_ key: TransactionKey, hash: UInt64) -> UInt64? {
        var i = Int(truncatingIfNeeded: hash) & mask
        while slots[i].serial != 0 {
            if slots[i].hash == hash, ring[Int(slots[i].serial - base)].key == key { return slots[i].serial }
            i = (i + 1) & mask
        }
        return nil
    }

    subscript(serial: UInt64) -> Transaction {
        get { ring[Int(serial - base)].transaction }
        set { ring[Int(serial - base)].transaction = newValue }
    }

    /// Appends a transaction (its serial must be `nextSerial`) and indexes it.
    mutating func append(_ key: TransactionKey, hash: UInt64, _ transaction: Transaction) {
        if (indexedCount + 1) * 2 > slots.count { grow() }
        var i = Int(truncatingIfNeeded: hash) & mask
        while slots[i].serial != 0 { i = (i + 1) & mask }
        slots[i] = Slot(hash: hash, serial: transaction.serial)
        indexedCount += 1
        ring.append(Entry(key: key, hash: hash, transaction: transaction))
    }

    /// Takes the oldest transaction out of the window and the index.
    mutating func removeOldest() -> Entry? {
        guard let entry = ring.popFirst() else { return nil }
        if entry.indexed { unindex(hash: entry.hash, serial: entry.transaction.serial) }
        base += 1
        return entry
    }

    /// Drops a transaction from the index (a new one reuses its key); it leaves the ring in its turn.
    mutating func retire(_ serial: UInt64) {
        let i = Int(serial - base)
        guard ring[i].indexed else { return }
        ring[i].indexed = false
        unindex(hash: ring[i].hash, serial: serial)
    }

    private mutating func unindex(hash: UInt64, serial: UInt64) {
        var hole = Int(truncatingIfNeeded: hash) & mask
        while slots[hole].serial != serial {
            guard slots[hole].serial != 0 else { return }
            hole = (hole + 1) & mask
        }
        var j = hole
        while true {
            j = (j + 1) & mask
            guard slots[j].serial != 0 else { break }
            let home = Int(truncatingIfNeeded: slots[j].hash) & mask
            // The entry at j may move into the hole unless its home lies cyclically in (hole, j].
            let stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j)
            if !stays {
                slots[hole] = slots[j]
                hole = j
            }
        }
        slots[hole] = Slot()
        indexedCount -= 1
    }

    private mutating func grow() {
        let old = slots
        slots = [Slot](repeating: Slot(), count: old.count * 2)
        mask = slots.count - 1
        for s in old where s.serial != 0 {
            var i = Int(truncatingIfNeeded: s.hash) & mask
            while slots[i].serial != 0 { i = (i + 1) & mask }
            slots[i] = s
        }
    }
}
