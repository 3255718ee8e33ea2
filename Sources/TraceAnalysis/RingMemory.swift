/// The memory of a ring of plain values (no references inside: copying is a byte copy), owned by one
/// value-type ring at a time: the ring keeps its positions in plain fields and copies this when a copy
/// of it shares it (`isKnownUniquelyReferenced`). TimeOrderWindow and TransactionWindow.
final class RingMemory<Element> {
    let capacity: Int
    let elements: UnsafeMutablePointer<Element>

    init(capacity: Int) {
        self.capacity = capacity
        elements = .allocate(capacity: capacity)
    }

    deinit {
        elements.deallocate()
    }

    /// A copy holding the same values at the same places.
    func copy() -> RingMemory {
        let r = RingMemory(capacity: capacity)
        UnsafeMutableRawPointer(r.elements).copyMemory(from: elements, byteCount: capacity * MemoryLayout<Element>.stride)
        return r
    }
}
