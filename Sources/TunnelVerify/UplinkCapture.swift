import CPcap
import Foundation
import Synchronization

/// A live libpcap capture of the packets leaving the sandbox through its uplink ("the physical
/// interface"). The pcap handle is opened on a thread inside the sandbox namespace (a packet
/// socket belongs to the namespace it was made in) and polled without blocking until `stop`.
final class UplinkCapture: Sendable {
    struct Frame: Sendable {
        /// Time since the run started.
        var offset: Duration
        var bytes: [UInt8]
    }

    private let frames = Mutex<[Frame]>([])
    private let stopping = Atomic<Bool>(false)
    private let finished = Atomic<Bool>(false)
    private let failure = Mutex<String?>(nil)
    private let ready = Atomic<Bool>(false)

    /// Opens the capture and returns once it is active, or throws why it could not be opened.
    static func start(namespacePath: String, interface: String, origin: ContinuousClock.Instant) async throws(VerifyError) -> UplinkCapture {
        let capture = UplinkCapture()
        let thread = Thread { capture.loop(namespacePath: namespacePath, interface: interface, origin: origin) }
        thread.start()
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(3)
        while !capture.ready.load(ordering: .acquiring) {
            if let reason = capture.failure.withLock({ $0 }) { throw VerifyError(.sandboxFailed, "cannot capture on \(interface): \(reason)") }
            guard clock.now < deadline else { throw VerifyError(.sandboxFailed, "the capture on \(interface) did not start") }
            try? await clock.sleep(for: .milliseconds(5))
        }
        return capture
    }

    private func loop(namespacePath: String, interface: String, origin: ContinuousClock.Instant) {
        // Wall-clock time of `origin`, to place the kernel's timestamps on the run's timeline.
        let originWall = Date().timeIntervalSince1970 - Double((ContinuousClock.now - origin).milliseconds) / 1000
        guard NamespaceThread.enter(namespacePath) else {
            failure.withLock { $0 = "cannot enter \(namespacePath)" }
            return
        }
        var errorBuffer = [CChar](repeating: 0, count: Int(CPcap_ERRBUF_SIZE))
        guard let handle = pcap_create(interface, &errorBuffer) else {
            failure.withLock { $0 = String(cString: errorBuffer) }
            return
        }
        defer { pcap_close(handle); finished.store(true, ordering: .releasing) }
        pcap_set_snaplen(handle, 2048)
        pcap_set_promisc(handle, 0)
        pcap_set_immediate_mode(handle, 1)
        guard pcap_activate(handle) >= 0 else {
            failure.withLock { $0 = String(cString: pcap_geterr(handle)) }
            return
        }
        // Only what leaves the sandbox: a leak is a packet sent, whatever comes back.
        pcap_setdirection(handle, PCAP_D_OUT)
        pcap_setnonblock(handle, 1, &errorBuffer)
        ready.store(true, ordering: .releasing)
        var header: UnsafeMutablePointer<pcap_pkthdr>?
        var data: UnsafePointer<UInt8>?
        while true {
            let status = pcap_next_ex(handle, &header, &data)
            if status == 1, let header, let data {
                let bytes = Array(UnsafeBufferPointer(start: data, count: Int(header.pointee.caplen)))
                // The kernel's timestamp, not the time of reading: the thread may lag behind.
                let stamp = header.pointee.ts
                let wall = Double(stamp.tv_sec) + Double(stamp.tv_usec) / 1_000_000
                let frame = Frame(offset: .milliseconds(Int64((wall - originWall) * 1000)), bytes: bytes)
                frames.withLock { $0.append(frame) }
                continue
            }
            if status < 0 { failure.withLock { $0 = String(cString: pcap_geterr(handle)) }; return }
            // Drained: stop only now, so that everything sent before `stop` is read.
            if stopping.load(ordering: .acquiring) { return }
            usleep(2000)
        }
    }

    /// Stops after reading what the kernel already queued; returns every frame captured.
    func stop() async -> [Frame] {
        try? await ContinuousClock().sleep(for: .milliseconds(30))
        stopping.store(true, ordering: .releasing)
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(2)
        while !finished.load(ordering: .acquiring), failure.withLock({ $0 }) == nil, clock.now < deadline {
            try? await clock.sleep(for: .milliseconds(5))
        }
        return frames.withLock { $0 }
    }

    /// Frames captured so far.
    var snapshot: [Frame] { frames.withLock { $0 } }
}
