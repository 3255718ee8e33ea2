import Capture
import Foundation

/// The capture of what leaves the sandbox through its uplink ("the physical interface"): the
/// Capture module's `LiveCapture` writes every outbound frame to a pcap file, and `stop` reads it
/// back as raw frames so that ARP, ICMP and IPv6 upkeep are itemized too (the live decoder yields
/// UDP and TCP only). The pcap handle is opened on a thread inside the sandbox namespace, because
/// a packet socket belongs to the namespace it was made in.
final class UplinkCapture: Sendable {
    struct Frame: Sendable {
        /// Time since the run started, from the kernel's timestamp.
        var offset: Duration
        var bytes: [UInt8]
    }

    private let live: LiveCapture
    let path: String
    private let originNanos: Int64

    private init(live: LiveCapture, path: String, originNanos: Int64) {
        self.live = live
        self.path = path
        self.originNanos = originNanos
    }

    /// Starts capturing; packets are recorded from the moment this returns.
    static func start(namespacePath: String, interface: String, path: String,
                      origin: ContinuousClock.Instant) async throws(VerifyError) -> UplinkCapture {
        // The run's origin on the wall clock, to place kernel timestamps on the run's timeline. In
        // full nanoseconds: cut to milliseconds it put every frame up to 1 ms early, and a query sent
        // right at the start of a check's window fell before the window and out of the evidence.
        // The wall clock is read first, so what error is left places frames late, never early.
        let wallNanos = Int64(Date().timeIntervalSince1970 * 1e9)
        let (seconds, attoseconds) = (ContinuousClock.now - origin).components
        let originNanos = wallNanos - (seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        // Only what the sandbox sends: a leak is a packet sent, whatever comes back.
        let live = LiveCapture(device: interface, filter: "", snapLength: 2048, writeTo: path, outboundOnly: true)
        try await start(live, namespacePath: namespacePath, what: "cannot capture on \(interface)")
        return UplinkCapture(live: live, path: path, originNanos: originNanos)
    }

    /// Starts `live` on a thread inside the namespace (a packet socket belongs to the namespace it
    /// was made in); a failure is `what` with libpcap's words.
    static func start(_ live: LiveCapture, namespacePath: String, what: String) async throws(VerifyError) {
        let failure = try await NamespaceThread.run(in: namespacePath) { () -> String? in
            do {
                try live.start()
                return nil
            } catch {
                return "\(error)"
            }
        }
        if let failure { throw VerifyError(.sandboxFailed, "\(what): \(failure)") }
    }

    /// Stops (after a moment for frames still in flight) and returns every frame captured.
    func stop() async -> [Frame] {
        try? await ContinuousClock().sleep(for: .milliseconds(30))
        _ = live.stop()
        var frames: [Frame] = []
        do {
            let reader = try CaptureFileReader(path: path)
            try reader.forEachFrame { bytes, _, nanos in
                frames.append(Frame(offset: .nanoseconds(nanos - originNanos), bytes: Array(bytes)))
            }
        } catch {
            // A cut file still gave every frame before the cut.
        }
        return frames
    }
}
