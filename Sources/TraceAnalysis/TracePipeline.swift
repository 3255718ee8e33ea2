import Capture
import Foundation
import Synchronization

/// Runs the reading, the link/IP/UDP decoding and `TraceFrontEnd` (DNS port filter, TCP reassembly,
/// question scan, resolver and domain tables) on a thread of its own and hands the resulting
/// `TraceEvent`s to the caller's thread, which puts them in time order (`TimeOrderWindow`) and matches
/// transactions: two cores instead of one. Order is kept: the events reach `body` in reading order,
/// exactly as `CaptureFileReader.forEachFrame` + `PacketDecoder.decode` + `TraceFrontEnd.packet` would
/// give them on one thread. (The window used to run on the reading thread; since the matcher
/// prefetches its index the reading thread is the longer of the two, so the window went back.)
///
/// The batches form a fixed ring (`slotCount` arrays of `batchEvents` events, plus the batches the
/// time-order window may hold), recycled as the consumer gives them back: memory is fixed, whatever the
/// file. Events carry no packet bytes. The two sides meet once per batch (two semaphores of a
/// single-producer single-consumer ring). The window keeps the events it holds in the batches
/// themselves (`TimeOrderWindow.push(lent:to:)`) instead of copying each into a ring of its own, and
/// gives a batch back once every event in it has gone to the matcher; batches come back in the order
/// they were filled.
final class TracePipeline: @unchecked Sendable {
    static let batchEvents = 2048
    static let slotCount = 4

    /// One batch of events. Touched by one side at a time (the semaphores hand it over). The consumer
    /// calls `giveBack()` once it no longer reads it; the reading thread may then fill it again.
    final class Batch {
        var count = 0
        var last = false
        let events = UnsafeMutablePointer<TraceEvent>.allocate(capacity: TracePipeline.batchEvents)
        /// Signalled by `giveBack()`: the pipeline's count of free batches.
        private let free: DispatchSemaphore

        init(free: DispatchSemaphore) {
            self.free = free
        }

        deinit {
            events.deallocate()
        }

        /// How many times the batch was given back since it was last filled (1 once the consumer is done).
        private(set) var givenBack = 0

        /// The consumer is done with the batch. (After the run, it only keeps the memory alive.)
        func giveBack() {
            givenBack += 1
            free.signal()
        }

        var isFull: Bool { count == TracePipeline.batchEvents }

        @inline(__always) func append(_ event: TraceEvent) {
            (events + count).initialize(to: event)
            count += 1
        }

        func reset() {
            count = 0
            last = false
            givenBack = 0
        }
    }

    private let reader: CaptureFileReader
    private var front: TraceFrontEnd
    private var decoder: PacketDecoder
    private var failure: CaptureError?
    private let slots: [Batch]
    private let free: DispatchSemaphore
    private let full = DispatchSemaphore(value: 0)
    private let stopRequested = Atomic<Bool>(false)

    /// `held`: how many batches the consumer may keep at once beyond the one it is given
    /// (`TimeOrderWindow.lentBatches`); the ring has that many more, so that the reading thread always
    /// has `slotCount` to fill.
    init(reader: CaptureFileReader, front: TraceFrontEnd, held: Int = 0) {
        self.reader = reader
        self.front = front
        decoder = PacketDecoder(linkType: reader.linkType)
        let count = Self.slotCount + max(0, held)
        // Created at 0 and raised: libdispatch traps when a semaphore is freed below the value it was
        // created with, and the window may still hold batches (not given back) when it is freed.
        let free = DispatchSemaphore(value: 0)
        for _ in 0..<count { free.signal() }
        self.free = free
        slots = (0..<count).map { _ in Batch(free: free) }
    }

    /// Runs the reading thread and calls `body` on the caller's thread for every batch of events, in
    /// reading order; `body` gives each back (`Batch.giveBack()`), at once or later, in the order it
    /// got them. `stop` is asked between batches; once it says so the reader stops at its next check
    /// and what it already decoded is still delivered. Returns the decoder (its counts, after
    /// `finish()`), the read error that ended the file early, if any, and the front end with its tables
    /// and counts.
    func run(
        stop: () -> Bool = { false }, _ body: (Batch) -> Void
    ) -> (decoder: PacketDecoder, error: CaptureError?, front: TraceFrontEnd) {
        let thread = Thread { [self] in produce() }
        thread.name = "tunnelprobe-read"
        thread.start()
        var slot = 0
        while true {
            full.wait()
            let batch = slots[slot]
            let last = batch.last  // read before `body`: once given back, the reader may refill it
            body(batch)
            if last { break }
            slot = (slot + 1) % slots.count
            if stop() { stopRequested.store(true, ordering: .relaxed) }
        }
        // The last batch was handed over after the reader's final writes (the semaphore orders them).
        return (decoder, failure, front)
    }

    private func produce() {
        // The decoder and the front end live in raw memory for the run: the per-packet closures reach
        // them through a pointer, without the reference counting a captured variable costs per packet.
        let decoder = UnsafeMutablePointer<PacketDecoder>.allocate(capacity: 1)
        decoder.initialize(to: self.decoder)
        let front = UnsafeMutablePointer<TraceFrontEnd>.allocate(capacity: 1)
        front.initialize(to: self.front)
        defer {
            decoder.deinitialize(count: 1).deallocate()
            front.deinitialize(count: 1).deallocate()
        }
        front.pointee.own()  // the caller's copy still shares the buffers
        // The batch being filled, also in raw memory (a captured variable would be boxed and retained
        // per event), holding an unretained reference: `slots` keeps every batch alive.
        let cursor = UnsafeMutablePointer<Cursor>.allocate(capacity: 1)
        defer { cursor.deallocate() }
        free.wait()
        cursor.initialize(to: Cursor(slot: 0, batch: Unmanaged.passUnretained(slots[0])))
        cursor.pointee.batch._withUnsafeGuaranteedRef { $0.reset() }
        // The closures below reach the pipeline without retaining it per packet (it outlives the run).
        unowned(unsafe) let pipeline = self
        let sink = UnsafeMutablePointer<BatchSink>.allocate(capacity: 1)
        sink.initialize(to: BatchSink(pipeline: Unmanaged.passUnretained(self), cursor: cursor))
        defer { sink.deallocate() }
        do {
            try reader.forEachFrame(stop: { pipeline.stopRequested.load(ordering: .relaxed) }) { frame, wireLength, time, link in
                decoder.pointee.decode(frame, linkType: link, wireLength: wireLength, timestampNanos: time) { header, payload in
                    front.pointee.packet(header, payload, knownDomains: true) { event in
                        sink.pointee.append(event)
                    }
                }
            }
        } catch {
            failure = error
        }
        decoder.pointee.finish()
        self.decoder = decoder.pointee
        self.front = front.pointee
        cursor.pointee.batch._withUnsafeGuaranteedRef { $0.last = true }
        full.signal()
    }

    private struct Cursor {
        var slot: Int
        var batch: Unmanaged<Batch>
    }

    /// Where the front end puts its events: the batch being filled.
    private struct BatchSink {
        let pipeline: Unmanaged<TracePipeline>
        let cursor: UnsafeMutablePointer<Cursor>

        @inline(__always) func append(_ event: TraceEvent) {
            if cursor.pointee.batch._withUnsafeGuaranteedRef({ $0.isFull }) {
                pipeline._withUnsafeGuaranteedRef { $0.handOver(cursor) }
            }
            cursor.pointee.batch._withUnsafeGuaranteedRef { $0.append(event) }
        }
    }

    /// Hands the full batch to the matching thread and waits for the next free one.
    private func handOver(_ cursor: UnsafeMutablePointer<Cursor>) {
        full.signal()
        cursor.pointee.slot = (cursor.pointee.slot + 1) % slots.count
        free.wait()
        cursor.pointee.batch = Unmanaged.passUnretained(slots[cursor.pointee.slot])
        cursor.pointee.batch._withUnsafeGuaranteedRef { $0.reset() }
    }
}
