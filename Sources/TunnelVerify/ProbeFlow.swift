import Base
import Foundation
import Results
import Synchronization

/// The steady probe flow of a resilience scenario: one HTTP GET to the whoami URL through the
/// tunnel every `interval` (through the TUN's routes, or through the engine's SOCKS5 proxy when
/// it has one), each sent on schedule whatever the previous one is doing, and each logged with
/// its send time and outcome.
enum ProbeFlow {
    final class StopFlag: Sendable {
        private let value = Mutex(false)
        var isSet: Bool { value.withLock { $0 } }
        func set() { value.withLock { $0 = true } }
    }

    /// Runs until `stop` is set (or the task is cancelled) and returns every probe, by send time.
    /// A probe counts as answered only when the body's first line is `expectedExit` (when given):
    /// an answer that came around the tunnel is a failure.
    static func run(url: WhoamiURL, socks: Endpoint?, namespacePath: String, origin: ContinuousClock.Instant, interval: Duration,
                    timeout: Duration, expectedExit: String?, stop: StopFlag) async -> [ResilienceResult.Probe] {
        let clock = ContinuousClock()
        return await withTaskGroup(of: ResilienceResult.Probe.self) { group in
            var tick = clock.now
            while !stop.isSet, !Task.isCancelled {
                let sent = clock.now
                group.addTask {
                    let result = await SandboxProbes.httpGet(url: url, socks: socks, namespacePath: namespacePath, timeout: timeout)
                    let atMs = (sent - origin).milliseconds
                    let latency = (clock.now - sent).milliseconds
                    switch result {
                    case .success(let body):
                        let first = body.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
                        if let expectedExit, first != expectedExit {
                            return .init(atMs: atMs, ok: false, latencyMs: latency, error: "answered from \(first), not the exit \(expectedExit)")
                        }
                        return .init(atMs: atMs, ok: true, latencyMs: latency, error: nil)
                    case .failure(let failure):
                        return .init(atMs: atMs, ok: false, latencyMs: nil, error: failure.description)
                    }
                }
                tick += interval
                try? await clock.sleep(until: tick)
            }
            var probes: [ResilienceResult.Probe] = []
            for await probe in group { probes.append(probe) }
            return probes.sorted { $0.atMs < $1.atMs }
        }
    }

    /// The probe log as CSV: `sent_ms,ok,latency_ms,error`.
    static func csv(_ probes: [ResilienceResult.Probe]) -> String {
        var text = "sent_ms,ok,latency_ms,error\n"
        for probe in probes {
            let error = (probe.error ?? "").replacingOccurrences(of: "\"", with: "'")
            text += "\(probe.atMs),\(probe.ok ? 1 : 0),\(probe.latencyMs.map(String.init) ?? ""),\"\(error)\"\n"
        }
        return text
    }

    /// Recovery time: from the end of the disruption to the answer of the first successful probe
    /// sent at or after it (the application-level "time to recover" of RFC 7680's loss framing is
    /// not defined for tunnels; this is the user-visible gap, measured from the probe log).
    static func recovery(_ probes: [ResilienceResult.Probe], disruptionEndMs: Int) -> Double? {
        guard let first = probes.first(where: { $0.ok && $0.atMs >= disruptionEndMs }), let latency = first.latencyMs else { return nil }
        return Double(first.atMs + latency - disruptionEndMs) / 1000
    }
}
