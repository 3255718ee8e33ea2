/// Where TimeOrderWindow hands the events it releases, in release order (TransactionMatcher; a recorder
/// in tests).
protocol TraceEventSink {
    mutating func events(_ events: UnsafeBufferPointer<TraceEvent>)
}

extension TransactionMatcher: TraceEventSink {}

/// Puts DNS events back in time order before matching, for captures whose records are not: a pcapng
/// whose interfaces were written from separate buffers, a host clock stepped back, files appended.
/// Out of order by more than Tmax, a response would otherwise reach the matcher after its query had
/// been given up on (a false loss), or before its query (unmatched, then the query lost).
///
/// Each event waits until an event `windowNanos` later in capture time has been read, or until
/// `maxEvents` wait; then events leave in time order (ties in reading order). So records out of order
/// by at most the window come out sorted exactly, memory is at most `maxEvents` events (64 bytes
/// each), and an event in order costs an append and a removal; only those that arrive out of order
/// go through a heap (log n).
///
/// Reading a file (TracePipeline), the window holds the events in the pipeline's batches themselves
/// (`push(lent:to:)`): an in-order event is neither copied nor moved, and a batch goes back to the
/// reading thread once every event in it has gone to the matcher. The first event out of order ends
/// that: the events waiting are copied into the window's own ring, the batches go back, and the window
/// carries on as above. Either way the same events leave in the same order (TimeOrderWindowTests).
struct TimeOrderWindow {
    /// 10 s: twice the default Tmax.
    static let defaultWindowNanos: Int64 = 10_000_000_000
    /// 65,536 events, 4 MiB: the full 10 s up to 3,250 queries per second; at 20,000 queries per
    /// second (40,000 events) about 1.6 s. What waits here at the end of a capture is matched after
    /// the reading ends, on one thread: at 131,072 that was about 15 ms of a 0.1 s run
    /// (bench-trace.sh, issue 27 item 5). (262,144 doubled trace's maximum RSS.)
    static let defaultMaxEvents = 1 << 16

    /// An event with its reading order in `serial`.
    private typealias Entry = TraceEvent

    let windowNanos: Int64
    let maxEvents: Int
    /// The events that arrived in order (times never decrease along it), in a fixed ring; nil until the
    /// first event. From `start`: the `pending` events already released in ring order and not yet
    /// handed to the matcher, then the waiting ones. Released events reach the matcher straight from
    /// the ring, in batches, without a copy.
    private var memory: RingMemory<TraceEvent>?
    private var ring = UnsafeMutablePointer<TraceEvent>(bitPattern: 64)!
    private var capacity = 0
    private var start = 0
    private var count = 0
    private var pending = 0
    /// Events that arrived earlier than the last in-order one: a binary min-heap.
    private var late: [Entry] = []
    private var serial: UInt32 = 0
    /// Events released from the heap, handed to the matcher in batches (it prefetches per batch).
    /// Either these or the ring's pending events are waiting for the matcher, never both: each side is
    /// flushed before the other takes one, so the matcher sees the release order.
    private var released: [TraceEvent] = []
    /// Events that arrived out of order and were put back (how disordered the capture was).
    private(set) var reordered = 0

    /// Lent mode: the batches holding the events that wait or were released and not yet handed on, in
    /// reading order (all of them in order: `late` is empty in this mode), from `lent[lentFirst]` on.
    /// In `lent[lentFirst]` (which ends at `lentEnd`): `lentNext` is the oldest event not yet handed
    /// to the matcher, `lentWaitingAt` the oldest waiting one (the events between the two are
    /// released); `lentWaiting` events wait from there.
    private var lent: [TracePipeline.Batch] = []
    private var lentFirst = 0
    private var lentNext = UnsafeMutablePointer<TraceEvent>(bitPattern: 64)!
    private var lentWaitingAt = UnsafeMutablePointer<TraceEvent>(bitPattern: 64)!
    private var lentEnd = UnsafeMutablePointer<TraceEvent>(bitPattern: 64)!
    private var lentWaiting = 0
    /// The time of the newest event that arrived in order (lent mode).
    private var lastTime: Int64 = .min
    /// False once an event arrived out of order or events came in by the other entries: the window then
    /// keeps its own ring for good.
    private var lending = true

    init(windowNanos: Int64 = TimeOrderWindow.defaultWindowNanos, maxEvents: Int = TimeOrderWindow.defaultMaxEvents) {
        self.windowNanos = max(0, windowNanos)
        self.maxEvents = max(1, maxEvents)
    }

    static let batch = 2048

    var waiting: Int { count - pending + late.count + lentWaiting }

    /// How many batches of `TracePipeline.batchEvents` the window may hold at once in lent mode (after
    /// a push: at most `maxEvents` waiting, which span one batch more when they start inside one); 0
    /// when it does not lend (its bound is larger than the pipeline should reserve for it, or it
    /// already keeps its own ring).
    var lentBatches: Int {
        let batches = (maxEvents + TracePipeline.batchEvents - 1) / TracePipeline.batchEvents + 1
        return lending && batches <= Self.maxLentBatches ? batches : 0
    }

    /// 64 batches of 2,048 events: 8 MiB.
    static let maxLentBatches = 64

    /// Makes the ring this window's own: taken with the first event; copied when a copy of the window
    /// shares it (value semantics).
    private mutating func ownRing() {
        if memory == nil {
            // At most maxEvents + 1 wait (before `add` releases one), beside fewer than a batch released.
            // Taken all at once (growing by doubling would hold the old and the new buffer at the peak).
            memory = RingMemory(capacity: maxEvents + Self.batch + 1)
        } else if !isKnownUniquelyReferenced(&memory) {
            memory = memory!.copy()
        }
        ring = memory!.elements
        capacity = memory!.capacity
    }

    /// The ring index of the k-th event from `start`.
    @inline(__always) private func index(_ k: Int) -> Int {
        let i = start + k
        return i >= capacity ? i - capacity : i
    }

    @inline(__always) private var inOrderWaiting: Int { count - pending }

    /// A pipeline's batch: kept (no copy) while its events wait, given back once they have all gone to
    /// the matcher; batches are given back in the order they came. Lends only as many batches at once as
    /// `lentBatches` said; without lending, the events are copied into the window's ring and the batch
    /// goes back at once.
    mutating func push<Sink: TraceEventSink>(lent batch: TracePipeline.Batch, to matcher: inout Sink) {
        let n = batch.count
        guard lending, lentBatches > 0 else {
            push(UnsafeBufferPointer(start: batch.events, count: n), to: &matcher)
            batch.giveBack()
            return
        }
        if lent.count == lentFirst {  // nothing held: this batch starts the run
            guard n > 0 else { return batch.giveBack() }
            lent.removeAll(keepingCapacity: true)
            lentFirst = 0
            lentNext = batch.events
            lentWaitingAt = batch.events
            lentEnd = batch.events + n
        }
        lent.append(batch)
        let events = batch.events
        for i in 0..<n {
            let time = events[i].time
            if lentWaiting > 0, time < lastTime {
                // Out of order: from here on the window keeps its own ring.
                keepOwnCopy(rest: UnsafeBufferPointer(start: events + i, count: n - i), to: &matcher)
                return
            }
            serial &+= 1
            lastTime = time
            lentWaiting += 1
            // Everything at least the window older than what was just read can leave (as in `add`).
            let (limit, overflow) = time.subtractingReportingOverflow(windowNanos)
            while lentWaiting > maxEvents || (!overflow && lentWaiting > 0 && lentWaitingAt.pointee.time <= limit) {
                lentWaiting -= 1
                lentWaitingAt += 1
                if lentWaitingAt == lentEnd { handOnLentBatch(to: &matcher) }
            }
        }
        flushLent(to: &matcher)
        // Never more than the pipeline keeps in reserve (it only sends full batches but the last, so this
        // holds there; shorter batches would spread the waiting events over more).
        if lent.count - lentFirst > lentBatches { keepOwnCopy(to: &matcher) }
    }

    /// Hands the released events of `lent[lentFirst]` to the matcher.
    @inline(__always) private mutating func flushLent<Sink: TraceEventSink>(to matcher: inout Sink) {
        guard lentWaitingAt > lentNext else { return }
        matcher.events(UnsafeBufferPointer(start: lentNext, count: lentWaitingAt - lentNext))
        lentNext = lentWaitingAt
    }

    /// Every event of the oldest lent batch is released: hands the rest of them on, gives the batch
    /// back, and moves to the next.
    private mutating func handOnLentBatch<Sink: TraceEventSink>(to matcher: inout Sink) {
        flushLent(to: &matcher)
        lent[lentFirst].giveBack()
        lentFirst += 1
        while lentFirst < lent.count, lent[lentFirst].count == 0 {  // an empty batch (the last one may be)
            lent[lentFirst].giveBack()
            lentFirst += 1
        }
        if lentFirst < lent.count {
            let next = lent[lentFirst]
            lentNext = next.events
            lentWaitingAt = next.events
            lentEnd = next.events + next.count
        }
    }

    /// Leaves lent mode for good: hands on what was released, copies the events still waiting into the
    /// window's own ring (with the reading order they had), gives every batch back but the newest,
    /// whose events `rest` (the newest's not yet added) still go through `add`; then that one too.
    private mutating func keepOwnCopy<Sink: TraceEventSink>(rest: UnsafeBufferPointer<TraceEvent> = .init(start: nil, count: 0),
                                                            to matcher: inout Sink) {
        lending = false
        flushLent(to: &matcher)
        ownRing()
        var k = 0
        let waiting = lentWaiting
        var b = lentFirst
        var p = lentWaitingAt
        var end = lentEnd
        while k < waiting {
            while p == end {
                b += 1
                p = lent[b].events
                end = p + lent[b].count
            }
            var entry = p.pointee
            entry.serial = serial &- UInt32(truncatingIfNeeded: waiting - 1 - k)
            (ring + index(count)).initialize(to: entry)
            count += 1
            k += 1
            p += 1
        }
        lentWaiting = 0
        let newest = lent.last!
        for batch in lent[lentFirst..<(lent.count - 1)] { batch.giveBack() }
        lent.removeAll()
        lentFirst = 0
        lastTime = .min
        if !rest.isEmpty {
            for e in rest { add(e, to: &matcher) }
            flush(to: &matcher)
        }
        newest.giveBack()
    }

    /// Events that come in by the other entries (one at a time, or a buffer of the caller's): the window
    /// keeps its own ring from then on.
    @inline(__always) private mutating func stopLending<Sink: TraceEventSink>(to matcher: inout Sink) {
        if lent.count > lentFirst { keepOwnCopy(to: &matcher) }
        lending = false
        ownRing()
    }

    mutating func push<Sink: TraceEventSink>(_ events: UnsafeBufferPointer<TraceEvent>, to matcher: inout Sink) {
        guard !events.isEmpty else { return }
        stopLending(to: &matcher)
        for e in events { add(e, to: &matcher) }
        flush(to: &matcher)
    }

    mutating func push<Sink: TraceEventSink>(_ event: TraceEvent, to matcher: inout Sink) {
        stopLending(to: &matcher)
        add(event, to: &matcher)
        flush(to: &matcher)
    }

    /// The end of the capture: everything still waiting, in order.
    mutating func drain<Sink: TraceEventSink>(to matcher: inout Sink) {
        while lent.count > lentFirst {  // lent mode: in order, batch by batch
            lentWaiting -= lentEnd - lentWaitingAt
            lentWaitingAt = lentEnd
            handOnLentBatch(to: &matcher)
        }
        lent.removeAll()
        lentFirst = 0
        lentWaiting = 0
        guard memory != nil else { return }  // nothing ever arrived
        ownRing()
        while waiting > 0 { releaseOne(to: &matcher) }
        flush(to: &matcher)
    }

    @inline(__always) private mutating func add<Sink: TraceEventSink>(_ e: TraceEvent, to matcher: inout Sink) {
        serial &+= 1
        var entry = e
        entry.serial = serial
        if inOrderWaiting > 0, e.time < ring[index(count - 1)].time {
            reordered += 1
            late.append(entry)
            siftUp(late.count - 1)
        } else {
            (ring + index(count)).initialize(to: entry)
            count += 1
        }
        // Everything at least the window older than what was just read can leave.
        let (limit, overflow) = e.time.subtractingReportingOverflow(windowNanos)
        if late.isEmpty {
            // Only in-order events wait: the oldest of them is the earliest, and it leaves from the ring.
            while inOrderWaiting > maxEvents || (!overflow && inOrderWaiting > 0 && ring[index(pending)].time <= limit) {
                releaseInOrder(to: &matcher)
            }
        } else {
            while waiting > maxEvents || (!overflow && (earliestTime.map { $0 <= limit } ?? false)) {
                releaseOne(to: &matcher)
            }
        }
    }

    private var earliestTime: Int64? {
        switch (inOrderWaiting > 0 ? ring[index(pending)].time : nil, late.first?.time) {
        case (nil, nil): nil
        case (let a?, nil): a
        case (nil, let b?): b
        case (let a?, let b?): min(a, b)
        }
    }

    /// Releases the earliest waiting event (time order, then reading order), if any.
    private mutating func releaseOne<Sink: TraceEventSink>(to matcher: inout Sink) {
        if inOrderWaiting > 0, late.isEmpty || Self.before(ring[index(pending)], late[0]) {
            releaseInOrder(to: &matcher)
            return
        }
        guard !late.isEmpty else { return }
        flushRing(to: &matcher)
        let top = late[0]
        let last = late.removeLast()
        if !late.isEmpty {
            late[0] = last
            siftDown(0)
        }
        released.append(top)
        if released.count == Self.batch { flushReleased(to: &matcher) }
    }

    /// Releases the oldest waiting in-order event: it stays in the ring, counted as pending.
    @inline(__always) private mutating func releaseInOrder<Sink: TraceEventSink>(to matcher: inout Sink) {
        if !released.isEmpty { flushReleased(to: &matcher) }
        pending += 1
        if pending == Self.batch { flushRing(to: &matcher) }
    }

    private mutating func flush<Sink: TraceEventSink>(to matcher: inout Sink) {
        flushRing(to: &matcher)  // at most one of the two holds events
        flushReleased(to: &matcher)
    }

    /// Hands the ring's released events to the matcher (at most two runs: the ring may wrap).
    private mutating func flushRing<Sink: TraceEventSink>(to matcher: inout Sink) {
        guard pending > 0 else { return }
        let first = min(pending, capacity - start)
        matcher.events(UnsafeBufferPointer(start: ring + start, count: first))
        if pending > first { matcher.events(UnsafeBufferPointer(start: ring, count: pending - first)) }
        start = index(pending)
        count -= pending
        pending = 0
    }

    private mutating func flushReleased<Sink: TraceEventSink>(to matcher: inout Sink) {
        guard !released.isEmpty else { return }
        released.withUnsafeBufferPointer { matcher.events($0) }
        released.removeAll(keepingCapacity: true)
    }

    /// Time order, then reading order; serials wrap, so they are compared by their difference (right
    /// while fewer than 2^31 events wait).
    @inline(__always) private static func before(_ a: Entry, _ b: Entry) -> Bool {
        a.time < b.time || (a.time == b.time && Int32(bitPattern: a.serial &- b.serial) < 0)
    }

    private mutating func siftUp(_ index: Int) {
        var i = index
        while i > 0 {
            let parent = (i - 1) / 2
            guard Self.before(late[i], late[parent]) else { return }
            late.swapAt(i, parent)
            i = parent
        }
    }

    private mutating func siftDown(_ index: Int) {
        var i = index
        while true {
            let left = 2 * i + 1, right = left + 1
            var smallest = i
            if left < late.count, Self.before(late[left], late[smallest]) { smallest = left }
            if right < late.count, Self.before(late[right], late[smallest]) { smallest = right }
            guard smallest != i else { return }
            late.swapAt(i, smallest)
            i = smallest
        }
    }
}
