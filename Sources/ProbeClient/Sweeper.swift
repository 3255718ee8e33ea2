import Base
public import Results
import OSLayer
import Foundation
import Synchronization

/// Where a sweep is: the permutation position reached and the addresses sent so far.
public struct SweepCheckpoint: Sendable, Hashable, Codable {
    /// Every walk position below this one (of this shard) has been sent (or, written ahead, is
    /// about to be), in the current pass.
    public var position: UInt64
    /// Addresses sent below `position` in the current pass (what `--sample` counts).
    public var emitted: UInt64
    /// True once the answers to everything below `position` have had their timeout: a resume from
    /// here loses nothing. False for the write-ahead checkpoints of a running sweep.
    public var settled: Bool
    /// `--expand-neighbours`: the prefixes (network addresses) of this pass whose other addresses
    /// were sent ahead of the walk; the walk skips them. nil: none.
    public var expanded: [UInt32]?
    /// `--expand-neighbours`, after a stop: the neighbours of an expanded prefix not sent yet (the
    /// prefix was cut short), which a resume sends first; and the answering addresses whose prefix
    /// was not expanded yet, which a resume expands first. nil: none.
    public var pendingNeighbours: [UInt32]?
    public var unexpanded: [UInt32]?

    public init(position: UInt64 = 0, emitted: UInt64 = 0, settled: Bool = true, expanded: [UInt32]? = nil) {
        self.position = position
        self.emitted = emitted
        self.settled = settled
        self.expanded = expanded
    }

    /// The prefixes (network addresses under `mask`) whose neighbours a stop cut short, in order.
    public func cutShort(mask: UInt32) -> [UInt32] {
        Array(Set((pendingNeighbours ?? []).map { $0 & mask })).sorted()
    }
}

/// What one pass walks: in a later pass, only what has not answered yet, and only as far as the
/// first pass went (a `--sample` is the same subset in every pass).
public struct SweepPassPlan: Sendable {
    public var pass: Int
    /// Addresses that answered in an earlier pass: not probed again (IPv4, and IPv6 in `skip6`).
    public var skip: Set<UInt32>
    public var skip6: Set<UInt128> = []
    /// Walk positions at or above this one are not walked (nil: the whole domain).
    public var walkLimit: UInt64?
    /// Addresses to send at most (`--sample`, first pass only; nil: no limit).
    public var emitLimit: UInt64?

    public init(pass: Int = 1, skip: Set<UInt32> = [], walkLimit: UInt64? = nil, emitLimit: UInt64? = nil) {
        self.pass = pass
        self.skip = skip
        self.walkLimit = walkLimit
        self.emitLimit = emitLimit
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
    public var shard: SweepShard = .whole
    /// `--expand-neighbours /L`: the prefix length whose other addresses are swept first when one
    /// of its addresses answers; nil: no expansion.
    public var neighbourPrefix: Int?
    /// `--send-path`: how the probes leave (`Sweeper.sendPath` says which was used).
    public var sendPath: SweepSendPathChoice = .auto

    public init(ranges: SweepRanges, seed: UInt64, rate: Double, sample: UInt64? = nil, timeout: Double = 2) {
        self.ranges = ranges
        self.seed = seed
        self.rate = rate
        self.sample = sample
        self.timeout = timeout
    }

    /// How many addresses the sweep will send to in its first pass (for a shard, the expected share).
    public var planned: UInt64 {
        let all = min(ranges.total, sample ?? .max)
        return shard.count == 1 ? all : (all + shard.count - 1 - shard.index) / shard.count
    }

    public var permutation: SweepPermutation { SweepPermutation(count: ranges.total, seed: seed) }
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
    /// Probes sent to the neighbours of answering addresses (`--expand-neighbours`), in `sent`.
    public var neighbourProbes: UInt64 = 0
    /// `sent - 1` over `sendSeconds`: the packet rate achieved.
    public var packetsPerSecond: Double? { sent > 1 && sendSeconds > 0 ? Double(sent - 1) / sendSeconds : nil }

    /// This run's figures followed by `later`'s (a later pass of the same run).
    public mutating func add(_ later: SweepStats) {
        sent += later.sent
        sendErrors += later.sendErrors
        lastSendError = later.lastSendError ?? lastSendError
        matched += later.matched
        unmatched += later.unmatched
        neighbourProbes += later.neighbourProbes
        // The rate's denominator: the time spent sending in each pass, not the timeouts between them.
        sendSeconds += later.sendSeconds
    }
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
    private let socket: UDPBatchSocket
    /// Where the probes leave: `socket` (the UDP path) or a packet socket.
    private let sender: BatchSender
    public let sendPath: SweepSendPathReport
    /// The IPv6 socket, when the ranges hold IPv6 addresses.
    private let socket6: UDPBatchSocket?
    private let stopFlag = Atomic<Bool>(false)
    private let stats = Mutex(SweepStats())
    /// `--expand-neighbours`: answering addresses not yet expanded, and the neighbours sent this pass.
    private let neighbours = Mutex<(queue: [UInt32], sent: Set<UInt32>)>((queue: [], sent: []))
    private let clockStart: UInt64

    public init(configuration: SweepConfiguration, probe: SweepProbe) throws(SweepError) {
        self.configuration = configuration
        self.probe = probe
        do { socket = try UDPBatchSocket() } catch {
            throw SweepError(description: "cannot open and bind a UDP socket: \(error)")
        }
        let (packetSocket, sendPath) = try Self.openSendPath(configuration.sendPath, ranges: configuration.ranges, sourcePort: socket.localPort)
        sender = packetSocket.map(BatchSender.packet) ?? .udp(socket)
        self.sendPath = sendPath
        if configuration.ranges.ipv6Total > 0 {
            do { socket6 = try UDPBatchSocket(ipv6: true) } catch {
                throw SweepError(description: "cannot open and bind an IPv6 UDP socket for the IPv6 ranges: \(error)")
            }
        } else {
            socket6 = nil
        }
        clockStart = Self.nowNanos()
    }

    /// Asks the sender to stop; the receiver still waits out the timeout of what was sent.
    public func stop() { stopFlag.store(true, ordering: .relaxed) }

    public var snapshot: SweepStats { stats.withLock { $0 } }

    static func nowNanos() -> UInt64 { MonotonicClock.nanos() }

    private var millis: UInt16 { UInt16(truncatingIfNeeded: (Self.nowNanos() - clockStart) / 1_000_000) }

    /// Sweeps one pass from `start`, calling `onAnswer` (on the receiver thread) for each answer of
    /// ours and `onCheckpoint` before each batch is sent (write-ahead, `settled` false) and once at
    /// the end (settled, after the last timeout). Returns when both threads are done, with this
    /// pass's figures and whether the walk reached its end.
    public func run(from start: SweepCheckpoint, plan: SweepPassPlan = SweepPassPlan(),
                    onAnswer: @escaping @Sendable (SweepAnswer) -> Void,
                    onCheckpoint: @escaping @Sendable (SweepCheckpoint) -> Void) async -> (SweepCheckpoint, SweepStats, exhausted: Bool) {
        stats.withLock { $0 = SweepStats() }
        // A resumed pass first expands the answers a stop left unexpanded.
        neighbours.withLock { $0 = (queue: start.unexpanded ?? [], sent: []) }
        let shared = RunState(start: start, now: Self.nowNanos())
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let finish: @Sendable () -> Void = {
                if shared.remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { continuation.resume() }
            }
            if let socket6 {
                shared.remaining.add(1, ordering: .relaxed)
                let receiver6 = Thread { [self] in
                    receive(shared: shared, on: socket6, onAnswer: onAnswer)
                    finish()
                }
                receiver6.start()
            }
            let sender = Thread { [self] in
                let reached = send(from: start, plan: plan, shared: shared, onCheckpoint: onCheckpoint)
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
        if configuration.neighbourPrefix != nil, !reached.exhausted {
            // Answers that came after the sender stopped: their prefixes are expanded on resume.
            let expanded = Set(reached.checkpoint.expanded ?? [])
            let mask = Self.mask(prefix: configuration.neighbourPrefix ?? 32)
            let left = neighbours.withLock { $0.queue }.filter { !expanded.contains($0 & mask) }
            reached.checkpoint.unexpanded = left.isEmpty ? nil : left
        }
        reached.checkpoint.settled = true
        onCheckpoint(reached.checkpoint)
        return (reached.checkpoint, snapshot, reached.exhausted)
    }

    /// Whether `address` was sent as a neighbour of an answering one in the current pass.
    public func sentAsNeighbour(_ address: UInt32) -> Bool { neighbours.withLock { $0.sent.contains(address) } }

    /// What the two threads of one run share.
    private final class RunState: Sendable {
        let senderDone = Atomic<Bool>(false)
        let lastSend: Atomic<UInt64>
        let final: Mutex<(checkpoint: SweepCheckpoint, exhausted: Bool)>
        let remaining = Atomic<Int>(2)
        init(start: SweepCheckpoint, now: UInt64) {
            lastSend = Atomic(now)
            final = Mutex((start, false))
        }
    }

    /// One address the walk chose: sent now, or already sent as a neighbour (counted, not sent again).
    /// An IPv6 one (`ipv6`) has its index among the IPv6 addresses in `address` (at most 2^24).
    private struct Chosen {
        var address: UInt32
        var position: UInt64
        var send: Bool
        var ipv6 = false
    }

    private func send(from start: SweepCheckpoint, plan: SweepPassPlan, shared: RunState,
                      onCheckpoint: @Sendable (SweepCheckpoint) -> Void) -> (checkpoint: SweepCheckpoint, exhausted: Bool) {
        let permutation = configuration.permutation
        let ranges = configuration.ranges
        let shard = configuration.shard
        let limit = plan.emitLimit ?? .max
        let end = min(permutation.domain, plan.walkLimit ?? .max)
        let rate = max(configuration.rate, 1)
        // 100 ms of probes per write-ahead checkpoint.
        let batchSize = max(16, Int(rate / 10))
        var pacer = SendPacer(rate: rate)
        var ids = SplitMix64(seed: configuration.seed ^ 0x4944_5320_5357_4550 ^ start.position ^ UInt64(plan.pass) << 56)
        var position = shard.align(start.position)
        var emitted = start.emitted
        var expanded = Set(start.expanded ?? [])
        let mask: UInt32? = configuration.neighbourPrefix.map(Self.mask(prefix:))
        // Neighbours a stop left unsent (`pendingNeighbours`), sent before anything else.
        var unsent: [UInt32] = start.pendingNeighbours ?? []
        // Probes go out in groups of at most half a millisecond's worth, one sendmmsg each.
        let group = sender.makeBatch(capacity: max(1, min(64, Int(rate / 2000))), payloadSize: 512)
        let group6 = socket6.map { _ in DatagramBatch(capacity: group.capacity, slotSize: 512).useIPv6() }
        var batch: [Chosen] = []
        batch.reserveCapacity(batchSize)
        var ahead: [UInt32] = []
        var stopped = false
        // Neighbours first: the rest of the prefix of each address that answered since the last
        // batch, except what the walk has sent already (its position is below ours) and what it
        // would not send (another shard's, answered in an earlier pass).
        func expandNeighbours() {
            ahead.removeAll(keepingCapacity: true)
            guard let mask else { return }
            let found = neighbours.withLock { n in
                defer { n.queue.removeAll(keepingCapacity: true) }
                return n.queue
            }
            for a in found where !expanded.contains(a & mask) {
                let network = a & mask
                expanded.insert(network)
                for offset in 0..<(UInt64(~mask) + 1) {
                    let b = UInt32(truncatingIfNeeded: UInt64(network) + offset)
                    guard b != a, !plan.skip.contains(b), let index = ranges.index(of: b) else { continue }
                    let p = permutation.position(of: index)
                    guard p >= position, shard.contains(position: p) else { continue }
                    ahead.append(b)
                }
            }
        }
        func sendAhead() {
            guard !ahead.isEmpty else { return }
            neighbours.withLock { n in n.sent.formUnion(ahead) }
            var sentAhead: UInt64 = 0
            for (i, target) in ahead.enumerated() {
                if stopFlag.load(ordering: .relaxed) {
                    // Stopped inside a prefix: the rest is kept for the resume (and the report).
                    unsent = Array(ahead[i...])
                    break
                }
                if enqueue(target, into: group, ids: &ids) { sentAhead += 1 }
                if group.count == group.capacity { flush(group, pacer: &pacer, shared: shared) }
            }
            flush(group, pacer: &pacer, shared: shared)
            stats.withLock { $0.neighbourProbes += sentAhead }
        }
        if !unsent.isEmpty {
            // Written ahead as sent, as the walk's batches are.
            onCheckpoint(SweepCheckpoint(position: position, emitted: emitted, settled: false, expanded: expanded.sorted()))
            ahead = unsent
            unsent = []
            sendAhead()
        }
        walk: while emitted < limit, position < end, !stopFlag.load(ordering: .relaxed) {
            expandNeighbours()
            // Choose the batch, write the checkpoint past it, then send the neighbours and the batch.
            batch.removeAll(keepingCapacity: true)
            var next = position
            var counted = emitted
            while batch.count < batchSize, counted < limit, next < end {
                let value = permutation.value(at: next)
                if let index = value, ranges.isIPv6(index: index) {
                    if plan.skip6.isEmpty || !plan.skip6.contains(ranges.address6(at: index)) {
                        batch.append(Chosen(address: UInt32(truncatingIfNeeded: index - ranges.ipv4Total), position: next, send: true, ipv6: true))
                        counted += 1
                    }
                } else if let index = value {
                    let target = ranges.address(at: index)
                    if !plan.skip.contains(target) {
                        let early = mask.map { expanded.contains(target & $0) } ?? false
                        batch.append(Chosen(address: target, position: next, send: !early))
                        counted += 1
                    }
                }
                next += shard.count
            }
            onCheckpoint(SweepCheckpoint(position: next, emitted: counted, settled: false,
                                         expanded: mask == nil ? nil : expanded.sorted()))
            sendAhead()
            var done = 0
            for chosen in batch {
                if stopFlag.load(ordering: .relaxed) { break }
                if chosen.ipv6, let group6, let socket6 {
                    let index = ranges.ipv4Total + UInt64(chosen.address)
                    let id = UInt16(truncatingIfNeeded: ids.next())
                    let now = millis
                    _ = group6.append(to6: ranges.address6(at: index), port: configuration.port) {
                        probe.write(forIPv6Index: index, millis: now, id: id, into: $0)
                    }
                    if group6.count == group6.capacity { flush(group6, pacer: &pacer, shared: shared, on: socket6) }
                } else if chosen.send {
                    _ = enqueue(chosen.address, into: group, ids: &ids)
                    if group.count == group.capacity { flush(group, pacer: &pacer, shared: shared) }
                }
                done += 1
            }
            flush(group, pacer: &pacer, shared: shared)
            if let group6, let socket6 { flush(group6, pacer: &pacer, shared: shared, on: socket6) }
            if done < batch.count {
                // Stopped inside the batch: resume at the first address not sent.
                position = batch[done].position
                emitted += UInt64(done)
                stopped = true
                break walk
            }
            position = next
            emitted = counted
        }
        // The walk is done; the neighbours of the last answers are still to come, until a
        // --timeout passes with none.
        let grace = UInt64(configuration.timeout * 1e9)
        while mask != nil, !stopped, !stopFlag.load(ordering: .relaxed) {
            guard neighbours.withLock({ !$0.queue.isEmpty }) else {
                if Self.nowNanos() > shared.lastSend.load(ordering: .acquiring) + grace { break }
                MonotonicClock.sleep(nanoseconds: 5_000_000)
                continue
            }
            expandNeighbours()
            onCheckpoint(SweepCheckpoint(position: position, emitted: emitted, settled: false, expanded: expanded.sorted()))
            sendAhead()
        }
        let seconds = pacer.sent > 1 ? Double(shared.lastSend.load(ordering: .acquiring) - pacer.first) / 1e9 : 0
        stats.withLock { $0.sendSeconds = seconds }
        let exhausted = !stopped && !stopFlag.load(ordering: .relaxed) && (emitted >= limit || position >= end)
        var reached = SweepCheckpoint(position: position, emitted: emitted, settled: false,
                                      expanded: mask == nil ? nil : expanded.sorted())
        if !unsent.isEmpty { reached.pendingNeighbours = unsent }
        return (reached, exhausted)
    }

    /// The network mask of a prefix length (0...32).
    static func mask(prefix: Int) -> UInt32 { prefix <= 0 ? 0 : ~UInt32(0) << UInt32(32 - min(32, prefix)) }

    /// Builds the probe for `target` into the group; false when no probe could be built (cannot
    /// happen for a valid zone).
    private func enqueue(_ target: UInt32, into group: DatagramBatch, ids: inout SplitMix64) -> Bool {
        let id = UInt16(truncatingIfNeeded: ids.next())
        let now = millis
        return group.append(to: target, port: configuration.port) { slot in probe.write(for: target, millis: now, id: id, into: slot) }
    }

    /// Sends the group when it is due (paced as one probe each), waiting for room in the socket's
    /// buffer rather than dropping a probe; empties it.
    private func flush(_ group: DatagramBatch, pacer: inout SendPacer, shared: RunState, on other: UDPBatchSocket? = nil) {
        guard group.count > 0 else { return }
        // The IPv6 socket is always the UDP path; the IPv4 probes leave by `sender`.
        let sender = other.map(BatchSender.udp) ?? self.sender
        pacer.wait(count: group.count)
        var start = 0
        var taken: UInt64 = 0
        while start < group.count {
            do {
                let n = try sender.send(group, from: start)
                start += n
                taken += UInt64(n)
            } catch {
                if error == .wouldBlock || error == .noBufferSpace {
                    sender.waitForRoom(milliseconds: 10)
                    continue
                }
                // This probe failed (counted as sent with an error); the rest of the group goes on.
                stats.withLock {
                    $0.sent += 1
                    $0.sendErrors += 1
                    $0.lastSendError = "\(error)"
                }
                start += 1
                continue
            }
        }
        stats.withLock { $0.sent += taken }
        shared.lastSend.store(Self.nowNanos(), ordering: .releasing)
        group.removeAll()
    }

    private func receive(shared: RunState, on other: UDPBatchSocket? = nil, onAnswer: @Sendable (SweepAnswer) -> Void) {
        let socket = other ?? self.socket
        let batch = DatagramBatch(capacity: 64, slotSize: 4096)
        if other != nil { batch.useIPv6() }
        let grace = UInt64(configuration.timeout * 1e9)
        while true {
            if shared.senderDone.load(ordering: .acquiring), Self.nowNanos() > shared.lastSend.load(ordering: .acquiring) + grace { return }
            guard socket.wait(readable: true, milliseconds: 20) else { continue }
            while true {
                do { try socket.receive(into: batch) } catch { break }
                guard batch.count > 0 else { break }
                var matched: UInt64 = 0
                for i in 0..<batch.count {
                    let datagram = Array(batch.payload(i))
                    let source: IPAddress = batch.peer6(i).map { .v6(UInt64(truncatingIfNeeded: $0 >> 64), UInt64(truncatingIfNeeded: $0)) }
                        ?? .v4(batch.peer(i))
                    guard !datagram.isEmpty, let answer = probe.match(datagram, source: source, millis: millis) else { continue }
                    matched += 1
                    // Neighbours are IPv4 prefixes: an IPv6 list is explicit, its neighbours are not swept.
                    if configuration.neighbourPrefix != nil, answer.answering, !source.isIPv6 {
                        neighbours.withLock { $0.queue.append(answer.value) }
                    }
                    onAnswer(answer)
                }
                let all = UInt64(batch.count)
                stats.withLock {
                    $0.matched += matched
                    $0.unmatched += all - matched
                }
            }
        }
    }
}

/// Paces the sender: probe n of a run goes out no earlier than n / rate seconds after the first.
/// A sender that fell behind (a busy CPU) does not catch up in a burst: the schedule restarts from
/// now, so no stretch of the sweep goes faster than --rate.
struct SendPacer {
    let rate: Double
    private(set) var sent: UInt64 = 0
    private(set) var first: UInt64 = 0
    private var base: UInt64 = 0
    private var scheduled: UInt64 = 0

    init(rate: Double) { self.rate = rate }

    /// Waits until the next `count` probes are due (they go out together).
    mutating func wait(count: Int = 1) {
        let now = Sweeper.nowNanos()
        if sent == 0 { first = now; base = now; scheduled = 0 }
        sent += UInt64(count)
        var due = base + UInt64(Double(scheduled) / rate * 1e9)
        if now > due + 10_000_000 {
            base = now
            scheduled = 0
            due = now
        }
        scheduled += UInt64(count)
        if due > now + 200_000 { MonotonicClock.sleep(nanoseconds: due - now) }
    }
}
