import Base
import OSLayer
import Foundation
import Glibc
import Synchronization

/// Where a sweep is: the permutation position reached and the addresses sent so far.
public struct SweepCheckpoint: Sendable, Hashable, Codable {
    /// Every walk position below this one has been sent (or, written ahead, is about to be).
    public var position: UInt64
    /// Addresses sent below `position` (what `--sample` counts).
    public var emitted: UInt64
    /// True once the answers to everything below `position` have had their timeout: a resume from
    /// here loses nothing. False for the write-ahead checkpoints of a running sweep.
    public var settled: Bool

    public init(position: UInt64 = 0, emitted: UInt64 = 0, settled: Bool = true) {
        self.position = position
        self.emitted = emitted
        self.settled = settled
    }
}

public struct SweepConfiguration: Sendable {
    public var ranges: SweepRanges
    public var seed: UInt64
    /// Packets per second, never exceeded on average (the sender paces itself to the packet).
    public var rate: Double
    /// Addresses to sweep at most (a random subset: the first ones of the permutation); nil: all.
    public var sample: UInt64?
    /// Seconds the receiver keeps listening after the last probe.
    public var timeout: Double
    public var port: UInt16 = 53

    public init(ranges: SweepRanges, seed: UInt64, rate: Double, sample: UInt64? = nil, timeout: Double = 2) {
        self.ranges = ranges
        self.seed = seed
        self.rate = rate
        self.sample = sample
        self.timeout = timeout
    }

    /// How many addresses the sweep will send to in all.
    public var planned: UInt64 { min(ranges.total, sample ?? .max) }
}

/// What a sweep did, for the report.
public struct SweepStats: Sendable, Codable, Hashable {
    public var sent: UInt64 = 0
    public var sendErrors: UInt64 = 0
    public var lastSendError: String?
    /// Datagrams that arrived and were ours / were not.
    public var matched: UInt64 = 0
    public var unmatched: UInt64 = 0
    /// Seconds from the first to the last probe of this run (the rate's denominator).
    public var sendSeconds: Double = 0
    /// `sent - 1` over `sendSeconds`: the packet rate achieved.
    public var packetsPerSecond: Double? { sent > 1 && sendSeconds > 0 ? Double(sent - 1) / sendSeconds : nil }
}

public struct SweepError: Error, Sendable, CustomStringConvertible {
    public var description: String
}

/// The stateless sender and receiver of a sweep: one UDP socket, one thread that walks the
/// permutation and sends one probe per address at the paced rate, one thread that reads answers
/// and names each one's address from its own name (`SweepProbe.match`). Nothing is kept per
/// address: memory is the same for 4,096 addresses and for 2^32.
public final class Sweeper: Sendable {
    public let configuration: SweepConfiguration
    public let probe: SweepProbe
    private let fd: Int32
    private let stopFlag = Atomic<Bool>(false)
    private let stats = Mutex(SweepStats())
    private let clockStart: UInt64

    public init(configuration: SweepConfiguration, probe: SweepProbe) throws(SweepError) {
        self.configuration = configuration
        self.probe = probe
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw SweepError(description: "cannot open a UDP socket: \(String(cString: strerror(errno)))") }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        var size: Int32 = 8 << 20
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else {
            let why = String(cString: strerror(errno))
            close(fd)
            throw SweepError(description: "cannot bind a UDP socket: \(why)")
        }
        self.fd = fd
        clockStart = Self.nowNanos()
    }

    deinit { close(fd) }

    /// Asks the sender to stop; the receiver still waits out the timeout of what was sent.
    public func stop() { stopFlag.store(true, ordering: .relaxed) }

    public var snapshot: SweepStats { stats.withLock { $0 } }

    static func nowNanos() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    private var millis: UInt16 { UInt16(truncatingIfNeeded: (Self.nowNanos() - clockStart) / 1_000_000) }

    /// Sweeps from `start`, calling `onAnswer` (on the receiver thread) for each answer of ours and
    /// `onCheckpoint` before each batch is sent (write-ahead, `settled` false) and once at the end
    /// (settled, after the last timeout). Returns when both threads are done.
    public func run(from start: SweepCheckpoint,
                    onAnswer: @escaping @Sendable (SweepAnswer) -> Void,
                    onCheckpoint: @escaping @Sendable (SweepCheckpoint) -> Void) async -> (SweepCheckpoint, SweepStats) {
        let shared = RunState(start: start, now: Self.nowNanos())
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let finish: @Sendable () -> Void = {
                if shared.remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { continuation.resume() }
            }
            let sender = Thread { [self] in
                let reached = send(from: start, shared: shared, onCheckpoint: onCheckpoint)
                shared.final.withLock { $0 = reached }
                shared.senderDone.store(true, ordering: .releasing)
                finish()
            }
            let receiver = Thread { [self] in
                receive(shared: shared, onAnswer: onAnswer)
                finish()
            }
            sender.start()
            receiver.start()
        }
        var reached = shared.final.withLock { $0 }
        reached.settled = true
        onCheckpoint(reached)
        return (reached, snapshot)
    }

    /// What the two threads of one run share.
    private final class RunState: Sendable {
        let senderDone = Atomic<Bool>(false)
        let lastSend: Atomic<UInt64>
        let final: Mutex<SweepCheckpoint>
        let remaining = Atomic<Int>(2)
        init(start: SweepCheckpoint, now: UInt64) {
            lastSend = Atomic(now)
            final = Mutex(start)
        }
    }

    private func send(from start: SweepCheckpoint, shared: RunState,
                      onCheckpoint: @Sendable (SweepCheckpoint) -> Void) -> SweepCheckpoint {
        let permutation = SweepPermutation(count: configuration.ranges.total, seed: configuration.seed)
        let limit = configuration.planned
        let rate = max(configuration.rate, 1)
        // 100 ms of probes per write-ahead checkpoint.
        let batchSize = max(16, Int(rate / 10))
        var ids = SplitMix64(seed: configuration.seed ^ 0x4944_5320_5357_4550 ^ start.position)
        var position = start.position
        var emitted = start.emitted
        var sentHere: UInt64 = 0
        var firstSend: UInt64 = 0
        var scheduleBase: UInt64 = 0
        var scheduled: UInt64 = 0
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = configuration.port.bigEndian
        var batch: [UInt32] = []
        batch.reserveCapacity(batchSize)
        walk: while emitted < limit, position < permutation.domain, !stopFlag.load(ordering: .relaxed) {
            // Choose the batch, write the checkpoint past it, then send it.
            batch.removeAll(keepingCapacity: true)
            var next = position
            while batch.count < batchSize, emitted + UInt64(batch.count) < limit, next < permutation.domain {
                if let index = permutation.value(at: next) { batch.append(configuration.ranges.address(at: index)) }
                next += 1
            }
            onCheckpoint(SweepCheckpoint(position: next, emitted: emitted + UInt64(batch.count), settled: false))
            var walked = position
            var sentOfBatch = 0
            for target in batch {
                if stopFlag.load(ordering: .relaxed) { break }
                // Pace: probe n of this run goes out no earlier than n / rate seconds after the first.
                // A sender that fell behind (a busy CPU) does not catch up in a burst: the schedule
                // restarts from now, so no stretch of the sweep goes faster than --rate.
                let now = Self.nowNanos()
                if sentHere == 0 { firstSend = now; scheduleBase = now; scheduled = 0 }
                var due = scheduleBase + UInt64(Double(scheduled) / rate * 1e9)
                if now > due + 10_000_000 {
                    scheduleBase = now
                    scheduled = 0
                    due = now
                }
                scheduled += 1
                if due > now + 200_000 {
                    var ts = timespec(tv_sec: Int((due - now) / 1_000_000_000), tv_nsec: Int((due - now) % 1_000_000_000))
                    var rest = timespec()
                    _ = try? SystemCall.retryingInterrupts {
                        let result = nanosleep(&ts, &rest)
                        ts = rest
                        return result
                    }
                }
                guard let query = probe.query(for: target, millis: millis, id: UInt16(truncatingIfNeeded: ids.next())) else {
                    // Cannot happen for a valid zone; counted as walked so the batch stays whole.
                    sentOfBatch += 1
                    continue
                }
                address.sin_addr.s_addr = target.bigEndian
                transmit(query, to: &address)
                sentHere += 1
                sentOfBatch += 1
                shared.lastSend.store(Self.nowNanos(), ordering: .releasing)
            }
            if sentOfBatch < batch.count {
                // Stopped inside the batch: find the walk position just after the last address sent.
                var counted = 0
                while walked < next, counted < sentOfBatch {
                    if permutation.value(at: walked) != nil { counted += 1 }
                    walked += 1
                }
                position = walked
                emitted += UInt64(sentOfBatch)
                break walk
            }
            position = next
            emitted += UInt64(batch.count)
        }
        let seconds = sentHere > 1 ? Double(shared.lastSend.load(ordering: .acquiring) - firstSend) / 1e9 : 0
        stats.withLock { $0.sendSeconds = seconds }
        return SweepCheckpoint(position: position, emitted: emitted, settled: false)
    }

    private func transmit(_ query: [UInt8], to address: inout sockaddr_in) {
        while true {
            let code: Int32
            do {
                _ = try SystemCall.retryingInterrupts {
                    query.withUnsafeBytes { buffer in
                        withUnsafePointer(to: &address) {
                            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                                sendto(fd, buffer.baseAddress, buffer.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                            }
                        }
                    }
                }
                stats.withLock { $0.sent += 1 }
                return
            } catch {
                code = error.rawValue
            }
            if code == EAGAIN || code == ENOBUFS {
                // The send buffer is full: wait for room rather than drop the probe.
                var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&p, 1, 10)
                continue
            }
            stats.withLock {
                $0.sent += 1
                $0.sendErrors += 1
                $0.lastSendError = String(cString: strerror(code))
            }
            return
        }
    }

    private func receive(shared: RunState, onAnswer: @Sendable (SweepAnswer) -> Void) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let grace = UInt64(configuration.timeout * 1e9)
        while true {
            if shared.senderDone.load(ordering: .acquiring), Self.nowNanos() > shared.lastSend.load(ordering: .acquiring) + grace { return }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 20) > 0 else { continue }
            while true {
                var from = sockaddr_in()
                var length = socklen_t(MemoryLayout<sockaddr_in>.size)
                let count = buffer.withUnsafeMutableBytes { raw in
                    withUnsafeMutablePointer(to: &from) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, raw.baseAddress, raw.count, 0, $0, &length) }
                    }
                }
                guard count > 0 else { break }
                let source = UInt32(bigEndian: from.sin_addr.s_addr)
                if let answer = probe.match(Array(buffer[0..<count]), source: source, millis: millis) {
                    stats.withLock { $0.matched += 1 }
                    onAnswer(answer)
                } else {
                    stats.withLock { $0.unmatched += 1 }
                }
            }
        }
    }
}
