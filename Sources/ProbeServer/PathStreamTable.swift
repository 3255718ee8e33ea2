import Foundation
public import ProbeProtocol
import Synchronization

/// The responder's receive history of path streams (docs/PROTOCOL.md, "Path probes").
///
/// Bounded: at most `maxStreams` streams (the least recently used is evicted), each a ring of
/// `ringSize` slots indexed by seq. A stream that was evicted and comes back knows nothing of the seqs
/// before its return, and says so by starting its windows there. Thread-safe (one lock; an update is a
/// few array writes, far below the cost of parsing the query around it).
public final class PathStreamTable: Sendable {
    public struct Limits: Sendable {
        public var maxStreams: Int
        public var ringSize: Int
        /// Evicted stream ids remembered (so a returning stream is not mistaken for a new one).
        public var evictedMemory: Int
        public init(maxStreams: Int = 256, ringSize: Int = PathReply.historyDepth, evictedMemory: Int = 4096) {
            self.maxStreams = max(1, maxStreams)
            self.ringSize = max(PathReply.maxEntries, ringSize)
            self.evictedMemory = max(1, evictedMemory)
        }
    }

    struct Slot {
        var seq: UInt32 = 0
        var copies: UInt8 = 0
        var arrival: UInt32 = 0
        var receivedMicros: UInt64 = 0
    }

    struct Stream {
        var slots: [Slot]
        var maxSeq: UInt32
        /// The lowest seq this state can speak for (0 unless the stream was evicted before).
        var lowestKnown: UInt32
        var arrivals: UInt32 = 0
        var lastUse: UInt64 = 0
    }

    struct State {
        var streams: [UInt32: Stream] = [:]
        var evicted: Set<UInt32> = []
        var evictedOrder: [UInt32] = []
        var tick: UInt64 = 0
    }

    public let limits: Limits
    private let clock: @Sendable () -> UInt64
    private let state = Mutex(State())

    /// `clockMicros`: the responder's clock in microseconds since the Unix epoch (injectable for tests).
    public init(limits: Limits = Limits(), clockMicros: (@Sendable () -> UInt64)? = nil) {
        self.limits = limits
        self.clock = clockMicros ?? { UInt64(max(0, Date().timeIntervalSince1970 * 1_000_000)) }
    }

    public var streamCount: Int { state.withLock { $0.streams.count } }

    /// Records the arrival of `probe` (unless it is a drain) and returns the history of the window of at
    /// most `maxEntries` seqs ending at its seq.
    public func record(_ probe: PathProbe, maxEntries: Int = PathReply.maxEntries) -> PathReply {
        let now = clock()
        let window = min(max(0, maxEntries), PathReply.maxEntries)
        let ring = limits.ringSize
        return state.withLock { s in
            s.tick &+= 1
            let id = probe.stream
            if s.streams[id] == nil {
                let returning = s.evicted.contains(id)
                if probe.drain {
                    // Never seen and never evicted: the responder can vouch that nothing arrived.
                    let base = window == 0 ? probe.seq : probe.seq &- UInt32(min(Int(probe.seq), window - 1))
                    let entries = returning ? [] : [PathReply.Entry](repeating: PathReply.Entry(copies: 0),
                                                                     count: window == 0 ? 0 : Int(probe.seq - base) + 1)
                    return PathReply(drain: true, seq: probe.seq, baseSeq: returning ? probe.seq : base,
                                     receivedMicros: now, arrivals: 0, entries: entries)
                }
                if s.streams.count >= limits.maxStreams, let victim = s.streams.min(by: { $0.value.lastUse < $1.value.lastUse })?.key {
                    s.streams[victim] = nil
                    if s.evicted.insert(victim).inserted { s.evictedOrder.append(victim) }
                    if s.evictedOrder.count > limits.evictedMemory { s.evicted.remove(s.evictedOrder.removeFirst()) }
                }
                s.streams[id] = Stream(slots: [Slot](repeating: Slot(), count: ring), maxSeq: probe.seq,
                                       lowestKnown: returning ? probe.seq : 0)
            }
            var stream = s.streams[id]!
            s.streams[id] = nil   // edit in place without a copy of the ring
            stream.lastUse = s.tick
            if !probe.drain {
                stream.maxSeq = max(stream.maxSeq, probe.seq)
                let oldest = stream.maxSeq >= UInt32(ring - 1) ? stream.maxSeq - UInt32(ring - 1) : 0
                if probe.seq >= oldest {
                    let k = Int(probe.seq % UInt32(ring))
                    if stream.slots[k].seq == probe.seq, stream.slots[k].copies > 0 {
                        stream.slots[k].copies = stream.slots[k].copies == 255 ? 255 : stream.slots[k].copies + 1
                    } else {
                        stream.slots[k] = Slot(seq: probe.seq, copies: 1, arrival: stream.arrivals, receivedMicros: now)
                        stream.arrivals &+= 1
                    }
                }
            }
            let oldest = stream.maxSeq >= UInt32(ring - 1) ? stream.maxSeq - UInt32(ring - 1) : 0
            let low = max(oldest, stream.lowestKnown)
            var entries: [PathReply.Entry] = []
            var base = probe.seq
            if window > 0, probe.seq >= low {
                base = max(low, probe.seq >= UInt32(window - 1) ? probe.seq - UInt32(window - 1) : 0)
                entries.reserveCapacity(Int(probe.seq - base) + 1)
                var q = base
                while true {
                    let slot = stream.slots[Int(q % UInt32(ring))]
                    if slot.seq == q, slot.copies > 0, q <= stream.maxSeq {
                        entries.append(PathReply.Entry(copies: Int(slot.copies), arrivalIndex: slot.arrival,
                                                       receivedMicros: slot.receivedMicros))
                    } else {
                        entries.append(PathReply.Entry(copies: 0))
                    }
                    if q == probe.seq { break }
                    q += 1
                }
            }
            s.streams[id] = stream
            return PathReply(drain: probe.drain, seq: probe.seq, baseSeq: base, receivedMicros: now,
                             arrivals: stream.arrivals, entries: entries)
        }
    }
}
