import CPcap
import Foundation
import Synchronization

/// What a live capture saw, from libpcap's counters (`pcap_stats`) and ours.
public struct CaptureStats: Sendable, Hashable, Codable {
    /// Packets that passed the filter and were handed to us.
    public var received: Int
    /// Packets the kernel dropped because the capture buffer was full (`ps_drop`).
    public var droppedByKernel: Int
    /// Packets the interface or driver dropped (`ps_ifdrop`), when the platform reports it.
    public var droppedByInterface: Int
    /// Packets written to the capture file (0 without one).
    public var written: Int
    /// Packets decoded to UDP/TCP, and the rest by reason.
    public var decoded: Int
    public var undecoded: UndecodedCounts

    public init(received: Int = 0, droppedByKernel: Int = 0, droppedByInterface: Int = 0, written: Int = 0,
                decoded: Int = 0, undecoded: UndecodedCounts = UndecodedCounts()) {
        self.received = received
        self.droppedByKernel = droppedByKernel
        self.droppedByInterface = droppedByInterface
        self.written = written
        self.decoded = decoded
        self.undecoded = undecoded
    }
}

/// A libpcap live capture on one device of the current network namespace (enter the namespace
/// first, or run the binary inside it), with a BPF filter, an optional pcap file written as it goes,
/// and decoded UDP/TCP packets handed to a callback on the capture thread.
///
/// ```swift
/// let capture = LiveCapture(device: "any", filter: "udp and host 198.18.0.1 and port 53",
///                           writeTo: "probe.pcap") { packet in ... }
/// try capture.start()
/// ...
/// let stats = capture.stop()
/// ```
///
/// The file is a classic pcap with nanosecond timestamps (magic 0xa1b23c4d), which tcpdump, Wireshark
/// and `tunnelprobe trace` read. The `any` device gives LINUX_SLL (or SLL2) frames; the decoder handles both.
public final class LiveCapture: @unchecked Sendable {
    public let device: String
    public let filter: String
    public let snapLength: Int
    public let path: String?
    private let onPacket: (@Sendable (DecodedPacket) -> Void)?

    // Guarded by `state`; the pcap handles are only touched by start(), the capture thread and stop().
    private let state = Mutex<State>(State())
    private struct State {
        var running = false
        /// Set by the capture thread once it left pcap_dispatch: the handle must not be poked after that.
        var loopEnded = false
        var stats = CaptureStats()
    }
    private var handle: OpaquePointer?
    private var dumper: OpaquePointer?
    private var thread: Thread?
    private let finished = DispatchSemaphore(value: 0)
    private var decoder = PacketDecoder(linkType: .ethernet)
    private var received = 0
    private var written = 0

    /// Only what the device sends (`pcap_setdirection(PCAP_D_OUT)`).
    public let outboundOnly: Bool

    /// `outboundOnly` keeps only what the device sends, through `pcap_setdirection` (libpcap checks
    /// the packet type the kernel gives each frame). Prefer it to an `outbound` filter: after
    /// `pcap_setfilter` libpcap filters the ring's current block in user space, where `outbound`
    /// (a Linux kernel extension) does not match, so packets sent right after `start` were lost
    /// (measured on a veth and a TUN: the first datagram of a burst 15 ms after the start; the
    /// block is retired after the 50 ms timeout set below).
    public init(device: String, filter: String, snapLength: Int = 65_535, writeTo path: String? = nil, outboundOnly: Bool = false,
                onPacket: (@Sendable (DecodedPacket) -> Void)? = nil) {
        self.outboundOnly = outboundOnly
        self.device = device
        self.filter = filter
        self.snapLength = snapLength
        self.path = path
        self.onPacket = onPacket
    }

    deinit {
        _ = stop()
    }

    /// Opens the device, installs the filter, opens the file and starts the capture thread. Throws when
    /// the device cannot be opened (missing, no CAP_NET_RAW), the filter does not compile or the file
    /// cannot be created. Packets are captured from the moment this returns.
    public func start() throws(CaptureError) {
        var errbuf = [CChar](repeating: 0, count: Int(CPcap_ERRBUF_SIZE))
        guard let p = pcap_create(device, &errbuf) else {
            throw CaptureError(.deviceFailed, CaptureError.text(errbuf), source: device)
        }
        func fail(_ code: CaptureError.Code, _ what: String) -> CaptureError {
            let message = String(cString: pcap_geterr(p))
            pcap_close(p)
            return CaptureError(code, "\(what): \(message)", source: device)
        }
        pcap_set_snaplen(p, Int32(clamping: snapLength))
        pcap_set_promisc(p, 0)
        // Immediate mode: packets reach us (and the file) as they arrive, so stop() loses nothing
        // that is still sitting in a ring buffer block.
        pcap_set_immediate_mode(p, 1)
        pcap_set_timeout(p, 50)
        pcap_set_buffer_size(p, 8 << 20)
        pcap_set_tstamp_precision(p, Int32(CPcap_TSTAMP_PRECISION_NANO))
        let status = pcap_activate(p)
        if status < 0 {
            let detail = String(cString: pcap_geterr(p))
            let message = String(cString: pcap_statustostr(status))
            pcap_close(p)
            // PCAP_ERROR_PERM_DENIED (-8): no CAP_NET_RAW.
            throw CaptureError(status == -8 ? .permissionDenied : .deviceFailed, detail.isEmpty ? message : "\(message): \(detail)", source: device)
        }
        if outboundOnly, pcap_setdirection(p, PCAP_D_OUT) != 0 { throw fail(.deviceFailed, "cannot capture outbound only") }
        var program = bpf_program()
        if pcap_compile(p, &program, filter, 1, CPcap_NETMASK_UNKNOWN) != 0 {
            throw fail(.badFilter, "filter \"\(filter)\"")
        }
        defer { pcap_freecode(&program) }
        if pcap_setfilter(p, &program) != 0 { throw fail(.badFilter, "filter \"\(filter)\"") }
        if let path {
            guard let d = pcap_dump_open(p, path) else { throw fail(.writeFailed, "cannot write \(path)") }
            dumper = d
        }
        handle = p
        decoder = PacketDecoder(linkType: LinkType(dlt: pcap_datalink(p)))
        state.withLock { $0.running = true }
        let thread = Thread { [self] in self.run() }
        thread.name = "tunnelprobe-capture"
        self.thread = thread
        thread.start()
    }

    /// Stops the capture, flushes and closes the file, and returns the counters. Safe to call twice.
    public func stop() -> CaptureStats {
        let wait = state.withLock { s -> Bool in
            guard s.running else { return false }
            s.running = false
            if !s.loopEnded, let handle { pcap_breakloop(handle) }
            return true
        }
        if wait { finished.wait() }
        return state.withLock { $0.stats }
    }

    private func run() {
        guard let p = handle else { return }
        let context = Unmanaged.passUnretained(self).toOpaque()
        while state.withLock({ $0.running }) {
            let n = pcap_dispatch(p, -1, { user, header, bytes in
                guard let user, let header, let bytes else { return }
                Unmanaged<LiveCapture>.fromOpaque(user).takeUnretainedValue().deliver(header, bytes)
            }, UnsafeMutablePointer(OpaquePointer(context)))
            if n < 0 { break }  // PCAP_ERROR_BREAK after pcap_breakloop, or the device went away
        }
        // Packets the kernel already holds when stop() breaks the loop are part of the capture too:
        // read them without blocking before closing, or the file would miss the last few.
        var errbuf = [CChar](repeating: 0, count: Int(CPcap_ERRBUF_SIZE))
        if pcap_setnonblock(p, 1, &errbuf) == 0 {
            while pcap_dispatch(p, -1, { user, header, bytes in
                guard let user, let header, let bytes else { return }
                Unmanaged<LiveCapture>.fromOpaque(user).takeUnretainedValue().deliver(header, bytes)
            }, UnsafeMutablePointer(OpaquePointer(context))) > 0 {}
        }
        state.withLock { $0.loopEnded = true }
        var pcapStats = pcap_stat()
        let haveStats = pcap_stats(p, &pcapStats) == 0
        if let dumper {
            pcap_dump_flush(dumper)
            pcap_dump_close(dumper)
        }
        dumper = nil
        pcap_close(p)
        handle = nil
        decoder.finish()
        state.withLock { s in
            s.stats.received = received
            s.stats.written = written
            s.stats.decoded = decoder.decoded
            s.stats.undecoded = decoder.undecoded
            if haveStats {
                s.stats.droppedByKernel = Int(pcapStats.ps_drop)
                s.stats.droppedByInterface = Int(pcapStats.ps_ifdrop)
            }
        }
        finished.signal()
    }

    private func deliver(_ header: UnsafePointer<pcap_pkthdr>, _ bytes: UnsafePointer<UInt8>) {
        received += 1
        if let dumper {
            pcap_dump(UnsafeMutablePointer<UInt8>(dumper), header, bytes)
            written += 1
        }
        let h = header.pointee
        // With nanosecond precision set, libpcap puts nanoseconds in tv_usec.
        let time = Int64(h.ts.tv_sec) * 1_000_000_000 + Int64(h.ts.tv_usec)
        let frame = UnsafeRawBufferPointer(start: bytes, count: Int(h.caplen))
        if let onPacket {
            if let packet = decoder.decodePacket(frame, wireLength: Int(h.len), timestampNanos: time) {
                onPacket(packet)
            }
        } else {
            decoder.decode(frame, wireLength: Int(h.len), timestampNanos: time) { _, _ in }
        }
    }
}
