import Capture

/// A transaction's identity: client address and port, resolver, DNS id, question (name hash, type).
struct TransactionKey: Equatable {
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

/// Open-addressing hash table (linear probing, backward-shift deletion) of the transactions in their
/// windows. Sized to the peak number of open transactions, never to the capture.
struct TransactionTable {
    private struct Slot {
        var used = false
        var hash: UInt64 = 0
        var key = TransactionKey(client: .v4(0), clientPort: 0, id: 0, resolver: 0, qtype: 0, name: 0)
        var transaction = Transaction(serial: 0, sent: 0, group: 0, resolverSequence: 0, groupSequence: 0, fate: -1)
    }

    private var slots: [Slot]
    private var mask: Int
    private(set) var count = 0

    init(capacity: Int = 1024) {
        var size = 16
        while size < capacity * 2 { size <<= 1 }
        slots = [Slot](repeating: Slot(), count: size)
        mask = size - 1
    }

    func find(_ key: TransactionKey, hash: UInt64) -> Int? {
        var i = Int(truncatingIfNeeded: hash) & mask
        while slots[i].used {
            if slots[i].hash == hash, slots[i].key == key { return i }
            i = (i + 1) & mask
        }
        return nil
    }

    func find(hash: UInt64, serial: UInt64) -> Int? {
        var i = Int(truncatingIfNeeded: hash) & mask
        while slots[i].used {
            if slots[i].hash == hash, slots[i].transaction.serial == serial { return i }
            i = (i + 1) & mask
        }
        return nil
    }

    subscript(slot: Int) -> Transaction {
        get { slots[slot].transaction }
        set { slots[slot].transaction = newValue }
    }

    /// Adds a transaction whose key is not in the table.
    mutating func insert(_ key: TransactionKey, hash: UInt64, _ transaction: Transaction) {
        if (count + 1) * 2 > slots.count { grow() }
        var i = Int(truncatingIfNeeded: hash) & mask
        while slots[i].used { i = (i + 1) & mask }
        slots[i] = Slot(used: true, hash: hash, key: key, transaction: transaction)
        count += 1
    }

    /// Removes the entry at `slot`, shifting later entries of its probe run back (no tombstones).
    mutating func remove(at slot: Int) {
        var hole = slot
        var j = slot
        while true {
            j = (j + 1) & mask
            guard slots[j].used else { break }
            let home = Int(truncatingIfNeeded: slots[j].hash) & mask
            // The entry at j may move into the hole unless its home lies cyclically in (hole, j].
            let stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j)
            if !stays {
                slots[hole] = slots[j]
                hole = j
            }
        }
        slots[hole].used = false
        count -= 1
    }

    mutating func removeAll() {
        for i in slots.indices { slots[i].used = false }
        count = 0
    }

    private mutating func grow() {
        let old = slots
        slots = [Slot](repeating: Slot(), count: old.count * 2)
        mask = slots.count - 1
        count = 0
        for s in old where s.used { insert(s.key, hash: s.hash, s.transaction) }
    }
}
