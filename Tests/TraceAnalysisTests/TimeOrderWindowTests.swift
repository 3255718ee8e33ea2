import Dispatch
import Testing
@testable import TraceAnalysis

/// TimeOrderWindow against a plain reference of its rule (each event waits until one `window` later has
/// been read or `maxEvents` wait; the earliest leaves first, ties in reading order): the same events
/// leave in the same order, whatever the batches, the disorder, the window and the event bound (small
/// bounds wrap the ring many times and mix released in-order and out-of-order events).
@Suite struct TimeOrderWindowTests {
    struct Recorder: TraceEventSink {
        var ids: [Int32] = []
        mutating func events(_ events: UnsafeBufferPointer<TraceEvent>) {
            for e in events { ids.append(e.size) }
        }
    }

    /// The rule, written for clarity (linear scans instead of a heap and a ring).
    struct Reference {
        let window: Int64
        let maxEvents: Int
        var inOrder: [TraceEvent] = []
        var late: [TraceEvent] = []
        var serial: UInt32 = 0
        var out: [Int32] = []
        var reordered = 0

        static func before(_ a: TraceEvent, _ b: TraceEvent) -> Bool {
            a.time < b.time || (a.time == b.time && Int32(bitPattern: a.serial &- b.serial) < 0)
        }

        mutating func pop() -> TraceEvent? {
            let lateMin = late.indices.min { Self.before(late[$0], late[$1]) }
            if let first = inOrder.first, lateMin.map({ Self.before(first, late[$0]) }) ?? true {
                return inOrder.removeFirst()
            }
            guard let i = lateMin else { return nil }
            return late.remove(at: i)
        }

        mutating func add(_ e: TraceEvent) {
            serial &+= 1
            var entry = e
            entry.serial = serial
            if let last = inOrder.last, e.time < last.time {
                reordered += 1
                late.append(entry)
            } else {
                inOrder.append(entry)
            }
            let (limit, overflow) = e.time.subtractingReportingOverflow(window)
            while true {
                let earliest = ([inOrder.first?.time, late.map(\.time).min()].compactMap { $0 }).min()
                guard inOrder.count + late.count > maxEvents || (!overflow && (earliest.map { $0 <= limit } ?? false)) else { break }
                guard let next = pop() else { break }
                out.append(next.size)
            }
        }

        mutating func drain() {
            while let next = pop() { out.append(next.size) }
        }
    }

    /// A seeded stream: times mostly rising, a share of them pulled back by up to `disorder`.
    static func stream(count: Int, disorder: Int64, share: Double, seed: UInt64, inOrderFirst: Int = 0) -> [TraceEvent] {
        var state = seed
        func next() -> UInt64 {
            state &+= 0x9e37_79b9_7f4a_7c15
            var z = state
            z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
            z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
            return z ^ (z >> 31)
        }
        var t: Int64 = 1_000_000
        return (0..<count).map { i in
            t += Int64(next() % 1000)
            var time = t
            if Double(next() % 10_000) / 10_000 < share, i >= inOrderFirst { time -= Int64(next() % UInt64(disorder + 1)) }
            var e = TraceEvent.tick(time)
            e.size = Int32(i)
            return e
        }
    }

    @Test(arguments: [
        (0 as Int64, 1 << 17, 0.0), (5_000, 1 << 17, 0.05), (20_000, 16, 0.2), (3_000, 100, 0.5), (100_000, 3000, 0.01),
        (50_000, 1, 0.3),
    ])
    func releasesWhatTheRuleReleasesInItsOrder(window: Int64, maxEvents: Int, share: Double) {
        for seed: UInt64 in [1, 2, 3] {
            let events = Self.stream(count: 9000, disorder: 40_000, share: share, seed: seed)
            var reference = Reference(window: window, maxEvents: maxEvents)
            for e in events { reference.add(e) }
            reference.drain()

            var order = TimeOrderWindow(windowNanos: window, maxEvents: maxEvents)
            var sink = Recorder()
            var i = 0, batch = 1
            while i < events.count {  // batches of 1, 2, 3, ... events, some pushed one at a time
                let end = min(events.count, i + batch)
                if batch % 4 == 0 {
                    for e in events[i..<end] { order.push(e, to: &sink) }
                } else {
                    events[i..<end].withUnsafeBufferPointer { order.push($0, to: &sink) }
                }
                i = end
                batch = batch % 2500 + 1
            }
            order.drain(to: &sink)
            #expect(sink.ids == reference.out, "window \(window), max \(maxEvents), share \(share), seed \(seed)")
            #expect(order.reordered == reference.reordered)
            #expect(order.waiting == 0)
        }
    }

    /// The same with the events lent in TracePipeline's batches (kept, not copied, while they wait):
    /// the same events leave in the same order, whether the window stays in lent mode (in order) or
    /// leaves it at the first event out of order; every batch goes back once, in the order it came,
    /// and the window never holds more batches than `lentBatches` said (the pipeline's reserve). The
    /// largest bound does not lend (65 batches > 64) and copies, as `push(_:to:)`.
    @Test(arguments: [
        (0 as Int64, 1 << 17, 0.0), (10_000_000_000, 5000, 0.0), (1_000_000_000, 3000, 0.0), (5_000, 4096, 0.05), (20_000, 16, 0.2),
        (3_000, 100, 0.5), (100_000, 3000, 0.01), (50_000, 1, 0.3),
    ])
    func lentBatchesReleaseWhatTheRuleReleases(window: Int64, maxEvents: Int, share: Double) {
        for seed: UInt64 in [1, 2, 3] {
            // In order for a while (lent mode, several batches held), then out of order.
            let events = Self.stream(count: 20_000, disorder: 40_000, share: share, seed: seed, inOrderFirst: 12_000)
            var reference = Reference(window: window, maxEvents: maxEvents)
            for e in events { reference.add(e) }
            reference.drain()

            var order = TimeOrderWindow(windowNanos: window, maxEvents: maxEvents)
            let reserve = order.lentBatches
            #expect(reserve == (maxEvents <= 63 * TracePipeline.batchEvents ? (maxEvents + 2047) / 2048 + 1 : 0))
            var sink = Recorder()
            let free = DispatchSemaphore(value: 0)
            var batches: [TracePipeline.Batch] = []
            var i = 0, k = 0
            var mostHeld = 0
            // Batches are taken from both ends of a pool, as a pipeline's ring hands them out in no order of
            // address: the window must never compare pointers of two batches.
            var pool = (0..<400).map { _ in TracePipeline.Batch(free: free) }
            while i < events.count {  // mostly full batches, some short, some empty
                let size = k % 7 == 3 ? 0 : (k % 5 == 4 ? Int(seed) * 100 + k : TracePipeline.batchEvents)
                let end = min(events.count, i + size)
                let batch = k % 2 == 0 ? pool.removeFirst() : pool.removeLast()  // addresses up and down
                for e in events[i..<end] { batch.append(e) }
                batches.append(batch)
                order.push(lent: batch, to: &sink)
                let held = batches.filter { $0.givenBack == 0 }
                mostHeld = max(mostHeld, held.count)
                // What is still held is the newest batches: they go back in order.
                #expect(held.map(ObjectIdentifier.init) == batches.suffix(held.count).map(ObjectIdentifier.init))
                i = end
                k += 1
            }
            order.drain(to: &sink)
            #expect(sink.ids == reference.out, "window \(window), max \(maxEvents), share \(share), seed \(seed)")
            #expect(order.reordered == reference.reordered)
            #expect(order.waiting == 0)
            #expect(batches.allSatisfy { $0.givenBack == 1 })
            #expect(mostHeld <= max(1, reserve), "held \(mostHeld) batches, reserved \(reserve)")
            if share == 0, reserve > 0, window > 0 { #expect(mostHeld > 1, "in order, the window should keep batches instead of copying") }
        }
    }

    /// A copy of a window carries on by itself (value semantics): both give the whole stream.
    @Test func aCopyOfTheWindowIsIndependent() {
        let events = Self.stream(count: 3000, disorder: 10_000, share: 0.1, seed: 9)
        var a = TimeOrderWindow(windowNanos: 5_000, maxEvents: 64)
        var sinkA = Recorder()
        events[0..<1500].withUnsafeBufferPointer { a.push($0, to: &sinkA) }
        var b = a
        var sinkB = sinkA
        events[1500...].withUnsafeBufferPointer { a.push($0, to: &sinkA) }
        a.drain(to: &sinkA)
        events[1500...].withUnsafeBufferPointer { b.push($0, to: &sinkB) }
        b.drain(to: &sinkB)
        #expect(sinkA.ids == sinkB.ids)
        #expect(Set(sinkA.ids).count == events.count)
    }
}
