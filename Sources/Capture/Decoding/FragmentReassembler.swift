import Base

/// Rebuilds IP datagrams from fragments (RFC 791 section 3.2 for IPv4, RFC 8200 section 4.5 for IPv6),
/// with bounded state: at most `maxPending` datagrams in flight, each at most 65,535 bytes, dropped
/// after `timeoutNanos` of capture time. Dropped fragments are reported back to the caller to count.
struct FragmentReassembler {
    struct Key: Hashable {
        var source: IPAddress
        var destination: IPAddress
        var identification: UInt32
        var proto: UInt8
    }

    private struct Pending {
        var firstSeen: Int64
        var pieces: [(offset: Int, bytes: [UInt8])] = []
        var totalLength: Int?
        var bytes = 0
    }

    let maxPending: Int
    let timeoutNanos: Int64
    private var pending: [Key: Pending] = [:]

    init(maxPending: Int = 256, timeoutNanos: Int64 = 30_000_000_000) {
        self.maxPending = maxPending
        self.timeoutNanos = timeoutNanos
    }

    enum Outcome {
        /// The datagram is complete: its transport header and payload, in order.
        case complete([UInt8])
        /// Kept until the other fragments arrive.
        case held
        /// This fragment cannot belong to a valid datagram (overlaps past 65,535, conflicting ends).
        case rejected
    }

    /// Adds one fragment. `dropped` receives the number of fragments of datagrams given up on.
    mutating func add(
        key: Key, offset: Int, moreFragments: Bool, data: UnsafeRawBufferPointer, now: Int64, dropped: inout Int
    ) -> Outcome {
        let end = offset + data.count
        guard end <= 65_535 else { return .rejected }
        var entry: Pending
        if let existing = pending.removeValue(forKey: key) {
            entry = existing
        } else {
            expire(now: now, dropped: &dropped)
            if pending.count >= maxPending, let oldest = pending.min(by: { $0.value.firstSeen < $1.value.firstSeen }) {
                dropped += oldest.value.pieces.count
                pending[oldest.key] = nil
            }
            entry = Pending(firstSeen: now)
        }
        if !moreFragments {
            if let known = entry.totalLength, known != end {
                dropped += entry.pieces.count + 1
                return .rejected
            }
            entry.totalLength = end
        }
        entry.pieces.append((offset, Array(data)))
        entry.bytes += data.count
        guard let total = entry.totalLength, entry.bytes >= total else {
            pending[key] = entry
            return .held
        }
        // Covered from 0 to total without holes? Overlaps are resolved first-come (RFC 5722 would
        // discard overlapping IPv6 fragments; a capture shows what the host received, so keep going).
        entry.pieces.sort { $0.offset < $1.offset }
        var covered = 0
        for piece in entry.pieces {
            if piece.offset > covered { break }
            covered = max(covered, piece.offset + piece.bytes.count)
        }
        guard covered >= total else {
            pending[key] = entry
            return .held
        }
        var datagram = [UInt8](repeating: 0, count: total)
        for piece in entry.pieces.reversed() {
            let upper = min(total, piece.offset + piece.bytes.count)
            if upper > piece.offset {
                datagram.replaceSubrange(piece.offset..<upper, with: piece.bytes[0..<(upper - piece.offset)])
            }
        }
        return .complete(datagram)
    }

    /// Gives up on every datagram still incomplete (end of the capture); returns their fragment count.
    mutating func drain() -> Int {
        let count = pending.values.reduce(0) { $0 + $1.pieces.count }
        pending.removeAll()
        return count
    }

    private mutating func expire(now: Int64, dropped: inout Int) {
        guard !pending.isEmpty else { return }
        for (key, entry) in pending where now - entry.firstSeen > timeoutNanos {
            dropped += entry.pieces.count
            pending[key] = nil
        }
    }
}
