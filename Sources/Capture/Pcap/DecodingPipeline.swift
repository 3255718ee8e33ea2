import Foundation
import Synchronization

/// Reads and decodes a capture file on a thread of its own and hands the decoded packets to the
/// caller's thread in batches, so that libpcap's reading and the link/IP/UDP decoding run beside the
/// analysis (two cores instead of one). Order is kept: packets reach `body` exactly as
/// `CaptureFileReader.forEachFrame` + `PacketDecoder.decode` would deliver them on one thread.
///
/// The batches form a fixed ring (`slotCount` buffers of `batchPackets` headers and their payloads
/// copied end to end), recycled as the consumer finishes them: memory is fixed, whatever the file.
/// The two sides meet once per batch (two semaphores of a single-producer single-consumer ring).
public final class DecodingPipeline: @unchecked Sendable {
    public static let batchPackets = 4096
    static let batchBytes = 1 << 20
    static let slotCount = 4

    /// One batch: headers, and payload offsets into one byte buffer. Touched by one side at a time
    /// (the semaphores hand it over).
    final class Batch {
        var count = 0
        var used = 0
        var last = false
        let headers = UnsafeMutablePointer<PacketHeader>.allocate(capacity: DecodingPipeline.batchPackets)
        let starts = UnsafeMutablePointer<Int>.allocate(capacity: DecodingPipeline.batchPackets + 1)
        var bytes: UnsafeMutableRawPointer
        var byteCapacity: Int

        init() {
            byteCapacity = DecodingPipeline.batchBytes
            bytes = .allocate(byteCount: byteCapacity, alignment: 16)
            starts[0] = 0
        }

        deinit {
            headers.deallocate()
            starts.deallocate()
            bytes.deallocate()
        }

        /// Room for one more packet with this payload size.
        @inline(__always) func fits(_ size: Int) -> Bool {
            count < DecodingPipeline.batchPackets && used + size <= byteCapacity
        }

        @inline(__always) func append(_ header: PacketHeader, _ payload: UnsafeRawBufferPointer) {
            if payload.count > byteCapacity {  // only ever in an empty batch: one payload larger than a batch
                bytes.deallocate()
                byteCapacity = payload.count
                bytes = .allocate(byteCount: byteCapacity, alignment: 16)
            }
            (headers + count).initialize(to: header)
            if let base = payload.baseAddress, payload.count > 0 {
                (bytes + used).copyMemory(from: base, byteCount: payload.count)
            }
            used += payload.count
            count += 1
            starts[count] = used
        }

        func reset() {
            count = 0
            used = 0
            last = false
        }
    }

    private let reader: CaptureFileReader
    private var decoder: PacketDecoder
    private var failure: CaptureError?
    private let slots: [Batch]
    private let free = DispatchSemaphore(value: DecodingPipeline.slotCount)
    private let full = DispatchSemaphore(value: 0)
    private let stopRequested = Atomic<Bool>(false)

    public init(reader: CaptureFileReader) {
        self.reader = reader
        decoder = PacketDecoder(linkType: reader.linkType)
        slots = (0..<Self.slotCount).map { _ in Batch() }
    }

    /// Runs the reading thread and calls `body` on the caller's thread for every decoded packet (the
    /// payload is valid during the call). `stop` is asked between batches; once it says so the reader
    /// stops at its next check and what it already decoded is still delivered. Returns the decoder (its
    /// counts, after `finish()`) and the read error that ended the file early, if any.
    public func run(
        stop: () -> Bool = { false }, _ body: (PacketHeader, UnsafeRawBufferPointer) -> Void
    ) -> (decoder: PacketDecoder, error: CaptureError?) {
        let thread = Thread { [self] in produce() }
        thread.name = "tunnelprobe-read"
        thread.start()
        var slot = 0
        while true {
            full.wait()
            let batch = slots[slot]
            let headers = batch.headers, starts = batch.starts, bytes = batch.bytes
            for i in 0..<batch.count {
                body(headers[i], UnsafeRawBufferPointer(start: bytes + starts[i], count: starts[i + 1] - starts[i]))
            }
            let last = batch.last
            free.signal()
            if last { break }
            slot = (slot + 1) % Self.slotCount
            if stop() { stopRequested.store(true, ordering: .relaxed) }
        }
        // The last batch was handed over after the reader's final writes (the semaphore orders them).
        return (decoder, failure)
    }

    private func produce() {
        var decoder = self.decoder
        var slot = 0
        free.wait()
        var batch = slots[slot]
        batch.reset()
        do {
            try reader.forEachFrame(stop: { self.stopRequested.load(ordering: .relaxed) }) { frame, wireLength, time in
                decoder.decode(frame, wireLength: wireLength, timestampNanos: time) { header, payload in
                    if !batch.fits(payload.count), batch.count > 0 {
                        full.signal()
                        slot = (slot + 1) % Self.slotCount
                        free.wait()
                        batch = slots[slot]
                        batch.reset()
                    }
                    batch.append(header, payload)
                }
            }
        } catch {
            failure = error
        }
        decoder.finish()
        self.decoder = decoder
        batch.last = true
        full.signal()
    }
}
