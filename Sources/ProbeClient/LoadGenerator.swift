public import Base
public import DNSWire
import NIOCore
import ProbeProtocol
import NIOConcurrencyHelpers

/// Closed-loop load like `dnsperf -q N`: N queries outstanding, a new one sent as each completes.
/// Every query is a fresh authenticated echo probe, so the responder does its full work for each.
public struct LoadGenerator: Sendable {
    public struct Result: Sendable {
        public var sent: Int
        public var answered: Int
        public var timedOut: Int
        public var seconds: Double
        public var queriesPerSecond: Double { Double(answered) / seconds }
    }

    public var prober: Prober
    public var zone: DNSName

    public init(prober: Prober, zone: DNSName) {
        self.prober = prober
        self.zone = zone
    }

    /// How the closed loop is driven.
    public enum Mode: String, Sendable, CaseIterable {
        /// Each completion sends the next probe from the engine's event loop, as dnsperf's loop does.
        case eventLoop
        /// One Swift task per outstanding query awaiting `Prober.upload`, as the scan pipeline does.
        case tasks
        /// The query engine alone, as dnsperf measures itself: probes built before the clock starts
        /// (dnsperf reads its data file first) and answers matched by id, not judged.
        case prebuilt
    }

    public func run(target: Endpoint, outstanding: Int, duration: Duration, mode: Mode = .eventLoop) async -> Result {
        switch mode {
        case .eventLoop: await runOnEventLoop(target: target, outstanding: outstanding, duration: duration)
        case .tasks: await runTasks(target: target, outstanding: outstanding, duration: duration)
        case .prebuilt: await runOnEventLoop(target: target, outstanding: outstanding, duration: duration, prebuilt: 50_000)
        }
    }

    private func runTasks(target: Endpoint, outstanding: Int, duration: Duration) async -> Result {
        let start = ContinuousClock.now
        let deadline = start + duration
        let totals = await withTaskGroup(of: (Int, Int, Int).self) { group in
            for _ in 0..<max(1, outstanding) {
                group.addTask {
                    var sent = 0, answered = 0, lost = 0
                    while ContinuousClock.now < deadline {
                        let o = await prober.upload(target, zone: zone, characters: ProbeMeta.characterCount, kind: .echo)
                        sent += 1
                        if o.ok { answered += 1 } else if o.failure == .timeout { lost += 1 }
                    }
                    return (sent, answered, lost)
                }
            }
            var t = (0, 0, 0)
            for await r in group { t = (t.0 + r.0, t.1 + r.1, t.2 + r.2) }
            return t
        }
        return Result(sent: totals.0, answered: totals.1, timedOut: totals.2, seconds: Self.seconds(since: start))
    }

    private func runOnEventLoop(target: Endpoint, outstanding: Int, duration: Duration, prebuilt: Int = 0) async -> Result {
        guard let address = target.socketAddress else { return Result(sent: 0, answered: 0, timedOut: 0, seconds: 0) }
        let queries = (0..<prebuilt).compactMap { _ in
            prober.prepareUpload(zone: zone, characters: ProbeMeta.characterCount, kind: .echo)?.bytes
        }
        let start = ContinuousClock.now
        let loop = ClosedLoop(prober: prober, zone: zone, address: address, deadline: start + duration,
                              outstanding: max(1, outstanding), prebuilt: queries)
        let totals = await withCheckedContinuation { (done: CheckedContinuation<(Int, Int, Int), Never>) in
            loop.start(done)
        }
        return Result(sent: totals.0, answered: totals.1, timedOut: totals.2, seconds: Self.seconds(since: start))
    }

    private static func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    /// Query names for a dnsperf data file (`name TXT` lines): the same echo probes, made in advance.
    public func dnsperfLines(count: Int) throws -> String {
        var lines: [String] = []
        lines.reserveCapacity(count)
        for _ in 0..<count {
            let meta = ProbeMeta(kind: .echo, nonce: Prober.nonce(), totalCharacters: ProbeMeta.characterCount)
            lines.append("\(try ProbeName.build(meta: meta, zone: zone, key: prober.key)) TXT")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

/// The event-loop closed loop: every completion judges its probe and sends the next one until the
/// deadline; the last completion to drain resumes the caller. Completions run on the engine's one
/// event loop, so the counters are only touched from there (the lock is uncontended).
private final class ClosedLoop: Sendable {
    private let prober: Prober
    private let zone: DNSName
    private let address: SocketAddress
    private let deadline: ContinuousClock.Instant
    private let outstanding: Int
    /// Queries made in advance, sent in turn and matched by id only (empty: build and judge each probe).
    private let prebuilt: [[UInt8]]
    private let state = NIOLockedValueBox(State())

    private struct State {
        var sent = 0, answered = 0, lost = 0, stopped = 0
        var done: CheckedContinuation<(Int, Int, Int), Never>?
    }

    init(prober: Prober, zone: DNSName, address: SocketAddress, deadline: ContinuousClock.Instant, outstanding: Int,
         prebuilt: [[UInt8]] = []) {
        self.prober = prober
        self.zone = zone
        self.address = address
        self.deadline = deadline
        self.outstanding = outstanding
        self.prebuilt = prebuilt
    }

    func start(_ done: CheckedContinuation<(Int, Int, Int), Never>) {
        state.withLockedValue { $0.done = done }
        for _ in 0..<outstanding { sendNext() }
    }

    private func sendNext() {
        if !prebuilt.isEmpty { return sendPrebuilt() }
        guard ContinuousClock.now < deadline,
              let probe = prober.prepareUpload(zone: zone, characters: ProbeMeta.characterCount, kind: .echo) else {
            finishOne()
            return
        }
        state.withLockedValue { $0.sent += 1 }
        prober.engine.send(probe.bytes, to: address, timeout: prober.timeout) { [self] result in
            let outcome = prober.judge(result, for: probe)
            state.withLockedValue {
                if outcome.ok { $0.answered += 1 } else if outcome.failure == .timeout { $0.lost += 1 }
            }
            sendNext()
        }
    }

    private func sendPrebuilt() {
        guard ContinuousClock.now < deadline else { return finishOne() }
        let n = state.withLockedValue { s -> Int in
            s.sent += 1
            return s.sent
        }
        prober.engine.send(prebuilt[n % prebuilt.count], to: address, timeout: prober.timeout) { [self] result in
            state.withLockedValue {
                switch result {
                // RCODE 0 in the low bits of byte 3, as dnsperf counts NOERROR.
                case .response(let bytes, _) where bytes.count >= 12 && bytes[3] & 0x0F == 0: $0.answered += 1
                case .timeout: $0.lost += 1
                default: break
                }
            }
            sendPrebuilt()
        }
    }

    /// One of the `outstanding` slots stopped; the last one resumes the caller.
    private func finishOne() {
        let finished: (CheckedContinuation<(Int, Int, Int), Never>, (Int, Int, Int))? = state.withLockedValue { s in
            s.stopped += 1
            guard s.stopped == outstanding, let done = s.done else { return nil }
            s.done = nil
            return (done, (s.sent, s.answered, s.lost))
        }
        if let (done, totals) = finished { done.resume(returning: totals) }
    }
}
