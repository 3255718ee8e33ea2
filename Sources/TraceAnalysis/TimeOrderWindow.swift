import DequeModule

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
struct TimeOrderWindow {
    /// 10 s: twice the default Tmax.
    static let defaultWindowNanos: Int64 = 10_000_000_000
    /// 131,072 events, 8 MiB: the full 10 s up to 6,500 queries per second; at 20,000 queries per
    /// second (40,000 events) about 3.3 s. (262,144 doubled trace's maximum RSS in bench-trace.sh.)
    static let defaultMaxEvents = 1 << 17

    /// An event with its reading order in `serial`.
    private typealias Entry = TraceEvent

    let windowNanos: Int64
    let maxEvents: Int
    /// Events that arrived in order (times never decrease along it).
    private var inOrder = Deque<Entry>()
    /// Events that arrived earlier than the last in-order one: a binary min-heap.
    private var late: [Entry] = []
    private var serial: UInt32 = 0
    /// Released events, handed to the matcher in batches (it prefetches per batch).
    private var released: [TraceEvent] = []
    /// Events that arrived out of order and were put back (how disordered the capture was).
    private(set) var reordered = 0

    init(windowNanos: Int64 = TimeOrderWindow.defaultWindowNanos, maxEvents: Int = TimeOrderWindow.defaultMaxEvents) {
        self.windowNanos = max(0, windowNanos)
        self.maxEvents = max(1, maxEvents)
        released.reserveCapacity(Self.batch)
    }

    /// Memory for the in-order events is taken when the first arrives, all at once: growing by doubling
    /// would hold the old and the new buffer at the peak (and end at twice the bound).
    private mutating func reserve() {
        inOrder.reserveCapacity(maxEvents + 1)
    }

    static let batch = 2048

    var waiting: Int { inOrder.count + late.count }

    mutating func push(_ events: UnsafeBufferPointer<TraceEvent>, to matcher: inout TransactionMatcher) {
        for e in events { add(e, to: &matcher) }
        flush(to: &matcher)
    }

    mutating func push(_ event: TraceEvent, to matcher: inout TransactionMatcher) {
        add(event, to: &matcher)
        flush(to: &matcher)
    }

    /// The end of the capture: everything still waiting, in order.
    mutating func drain(to matcher: inout TransactionMatcher) {
        while let next = pop() { emit(next, to: &matcher) }
        flush(to: &matcher)
    }

    @inline(__always) private mutating func add(_ e: TraceEvent, to matcher: inout TransactionMatcher) {
        serial &+= 1
        var entry = e
        entry.serial = serial
        if let last = inOrder.last, e.time < last.time {
            reordered += 1
            late.append(entry)
            siftUp(late.count - 1)
        } else {
            if serial == 1 { reserve() }
            inOrder.append(entry)
        }
        // Everything at least the window older than what was just read can leave.
        let (limit, overflow) = e.time.subtractingReportingOverflow(windowNanos)
        while waiting > maxEvents || (!overflow && (earliestTime.map { $0 <= limit } ?? false)) {
            guard let next = pop() else { break }
            emit(next, to: &matcher)
        }
    }

    private var earliestTime: Int64? {
        switch (inOrder.first, late.first) {
        case (nil, nil): nil
        case (let a?, nil): a.time
        case (nil, let b?): b.time
        case (let a?, let b?): min(a.time, b.time)
        }
    }

    @inline(__always) private mutating func emit(_ e: TraceEvent, to matcher: inout TransactionMatcher) {
        released.append(e)
        if released.count == Self.batch { flush(to: &matcher) }
    }

    private mutating func flush(to matcher: inout TransactionMatcher) {
        guard !released.isEmpty else { return }
        released.withUnsafeBufferPointer { matcher.events($0) }
        released.removeAll(keepingCapacity: true)
    }

    private mutating func pop() -> TraceEvent? {
        if let a = inOrder.first, late.isEmpty || Self.before(a, late[0]) {
            return inOrder.removeFirst()
        }
        guard !late.isEmpty else { return nil }
        let top = late[0]
        let last = late.removeLast()
        if !late.isEmpty {
            late[0] = last
            siftDown(0)
        }
        return top
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
