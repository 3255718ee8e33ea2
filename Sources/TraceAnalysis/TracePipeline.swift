import Capture
import Foundation
import Synchronization

/// Reads and decodes a capture file on a thread of its own and hands the decoded packets to the
/// caller's thread in batches, so that libpcap's reading, the link/IP/UDP decoding and the DNS
/// question scan of UDP messages on DNS ports run beside the transaction matching (two cores instead
/// of one). Order is kept: packets reach `body` exactly as `CaptureFileReader.forEachFrame` +
/// `PacketDecoder.decode` would deliver them on one thread, each with its question scan when it has one.
///
/// The batches form a fixed ring (`slotCount` buffers of `batchPackets` headers and their payloads
/// copied end to end), recycled as the consumer finishes them: memory is fixed, whatever the file.
/// The two sides meet once per batch (two semaphores of a single-producer single-consumer ring).
final class TracePipeline: @unchecked Sendable {
    static let batchPackets = 4096
    static let batchBytes = 1 << 20
    static let slotCount = 4

    /// One batch: headers, and payload offsets into one byte buffer. Touched by one side at a time
    /// (the semaphores hand it over).
    final class Batch {
        var count = 0
        var used = 0
        var last = false
        let headers = UnsafeMutablePointer<PacketHeader>.allocate(capacity: TracePipeline.batchPackets)
        /// The question scan of each packet (`scanned[i]`: 0 none, 1 scanned, 2 + failure index).
        let scans = UnsafeMutablePointer<DNSQuestionScan>.allocate(capacity: TracePipeline.batchPackets)
        let scanned = UnsafeMutablePointer<UInt8>.allocate(capacity: TracePipeline.batchPackets)
        let starts = UnsafeMutablePointer<Int>.allocate(capacity: TracePipeline.batchPackets + 1)
        var bytes: UnsafeMutableRawPointer
        var byteCapacity: Int

        init() {
            byteCapacity = TracePipeline.batchBytes
            bytes = .allocate(byteCount: byteCapacity, alignment: 16)
            starts[0] = 0
        }

        deinit {
            headers.deallocate()
            scans.deallocate()
            scanned.deallocate()
            starts.deallocate()
            bytes.deallocate()
        }

        /// Room for one more packet with this payload size.
        @inline(__always) func fits(_ size: Int) -> Bool {
            count < TracePipeline.batchPackets && used + size <= byteCapacity
        }

        @inline(__always) func append(_ header: PacketHeader, _ payload: UnsafeRawBufferPointer, _ outcome: UInt8, _ scan: DNSQuestionScan) {
            if payload.count > byteCapacity {  // only ever in an empty batch: one payload larger than a batch
                bytes.deallocate()
                byteCapacity = payload.count
                bytes = .allocate(byteCount: byteCapacity, alignment: 16)
            }
            (headers + count).initialize(to: header)
            scanned[count] = outcome
            if outcome == 1 { (scans + count).initialize(to: scan) }
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
    private let options: TraceOptions
    private var decoder: PacketDecoder
    private var failure: CaptureError?
    private let slots: [Batch]
    private let free = DispatchSemaphore(value: TracePipeline.slotCount)
    private let full = DispatchSemaphore(value: 0)
    private let stopRequested = Atomic<Bool>(false)

    init(reader: CaptureFileReader, options: TraceOptions) {
        self.reader = reader
        self.options = options
        decoder = PacketDecoder(linkType: reader.linkType)
        slots = (0..<Self.slotCount).map { _ in Batch() }
    }

    /// Runs the reading thread and calls `body` on the caller's thread for every decoded packet (the
    /// payload is valid during the call). `stop` is asked between batches; once it says so the reader
    /// stops at its next check and what it already decoded is still delivered. Returns the decoder (its
    /// counts, after `finish()`) and the read error that ended the file early, if any.
    func run(
        stop: () -> Bool = { false }, _ body: (PacketHeader, UnsafeRawBufferPointer, UInt8, DNSQuestionScan) -> Void
    ) -> (decoder: PacketDecoder, error: CaptureError?) {
        let thread = Thread { [self] in produce() }
        thread.name = "tunnelprobe-read"
        thread.start()
        var slot = 0
        while true {
            full.wait()
            let batch = slots[slot]
            let headers = batch.headers, starts = batch.starts, bytes = batch.bytes, scans = batch.scans, scanned = batch.scanned
            let none = DNSQuestionScan()
            for i in 0..<batch.count {
                body(headers[i], UnsafeRawBufferPointer(start: bytes + starts[i], count: starts[i + 1] - starts[i]),
                     scanned[i], scanned[i] == 1 ? scans[i] : none)
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
        let scratch = QuestionScratch()
        let name = scratch.name, suffixHashes = scratch.suffixHashes, labelStarts = scratch.labelStarts
        // Raw memory and unretained references in the per-packet closure: no reference counting per packet.
        let portBits = UnsafeMutablePointer<UInt64>.allocate(capacity: 1024)
        portBits.initialize(repeating: 0, count: 1024)
        defer { portBits.deallocate() }
        for port in options.dnsPorts { portBits[Int(port) >> 6] |= 1 << UInt64(port & 63) }
        let encodedLabelMin = options.encodedLabelMin
        let failures = DNSQuestionScan.Failure.allCases
        var slot = 0
        free.wait()
        var batch = Unmanaged.passUnretained(slots[slot])  // `slots` holds every batch
        batch._withUnsafeGuaranteedRef { $0.reset() }
        do {
            try reader.forEachFrame(stop: { self.stopRequested.load(ordering: .relaxed) }) { frame, wireLength, time in
                decoder.decode(frame, wireLength: wireLength, timestampNanos: time) { header, payload in
                    if batch._withUnsafeGuaranteedRef({ !$0.fits(payload.count) && $0.count > 0 }) {
                        full.signal()
                        slot = (slot + 1) % Self.slotCount
                        free.wait()
                        batch = Unmanaged.passUnretained(slots[slot])
                        batch._withUnsafeGuaranteedRef { $0.reset() }
                    }
                    // The question scan of a UDP message on a DNS port is done here, beside the matching.
                    var scan = DNSQuestionScan()
                    var outcome: UInt8 = 0
                    if header.transport == .udp,
                       portBits[Int(header.sourcePort) >> 6] & (1 << UInt64(header.sourcePort & 63)) != 0
                        || portBits[Int(header.destinationPort) >> 6] & (1 << UInt64(header.destinationPort & 63)) != 0 {
                        if let failure = DNSQuestionScan.scan(payload, name: name, suffixHashes: suffixHashes,
                                                              labelStarts: labelStarts, into: &scan) {
                            outcome = 2 + UInt8(failures.firstIndex(of: failure) ?? 0)
                        } else {
                            scan.prepareDomainHashes(encodedLabelMin: encodedLabelMin, name: name,
                                                     suffixHashes: suffixHashes, labelStarts: labelStarts)
                            outcome = 1
                        }
                    }
                    batch._withUnsafeGuaranteedRef { $0.append(header, payload, outcome, scan) }
                }
            }
        } catch {
            failure = error
        }
        withExtendedLifetime(scratch) {}
        decoder.finish()
        self.decoder = decoder
        batch._withUnsafeGuaranteedRef { $0.last = true }
        full.signal()
    }
}
