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
/// Where TimeOrderWindow hands the events it releases, in release order (TransactionMatcher; a recorder
/// in tests).
protocol TraceEventSink {
    mutating func events(_ events: UnsafeBufferPointer<TraceEvent>)
}

extension TransactionMatcher: TraceEventSink {}

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

    init(windowNanos: Int64 = TimeOrderWindow.defaultWindowNanos, maxEvents: Int = TimeOrderWindow.defaultMaxEvents) {
        self.windowNanos = max(0, windowNanos)
        self.maxEvents = max(1, maxEvents)
    }

    static let batch = 2048

    var waiting: Int { count - pending + late.count }

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

    mutating func push<Sink: TraceEventSink>(_ events: UnsafeBufferPointer<TraceEvent>, to matcher: inout Sink) {
        guard !events.isEmpty else { return }
        ownRing()
        for e in events { add(e, to: &matcher) }
        flush(to: &matcher)
    }

    mutating func push<Sink: TraceEventSink>(_ event: TraceEvent, to matcher: inout Sink) {
        ownRing()
        add(event, to: &matcher)
        flush(to: &matcher)
    }

    /// The end of the capture: everything still waiting, in order.
    mutating func drain<Sink: TraceEventSink>(to matcher: inout Sink) {
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
