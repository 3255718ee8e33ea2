import Base
import DequeModule
public import FEC
import Foundation
import HeapModule

/// One simulated transfer: a sender with FEC framing and selective-repeat ARQ, a receiver that rebuilds
/// groups and releases packets in order, a data channel and a feedback channel.
///
/// Every datagram the sender emits (original, repair symbol or retransmission) takes the data channel's
/// next opportunity and meets that opportunity's fate; every feedback message (ACKs and NACKs) takes the
/// feedback channel's. Recoverability is decided by counting: a group whose receiver holds k' of its
/// k' + m' symbols is rebuilt (MDS). A sample of the rebuilt groups is really encoded and rebuilt
/// through ISA-L (`GroupVerifier`).
///
/// State lives in ring buffers indexed by sequence number; the window bounds the live span, so a run
/// of any length allocates nothing per packet.
public struct LinkSimulator {
    public struct Settings: Sendable {
        public var level: FECLevel
        public var arq: ARQConfiguration
        public var traffic: TrafficPattern
        /// Payload bytes per packet (and per repair symbol).
        public var symbolSize: Int
        /// Tunnel framing bytes on every datagram, data and feedback alike.
        public var headerBytes: Int
        /// Bytes per ACK or NACK entry in a feedback message.
        public var feedbackEntryBytes: Int
        /// Data-channel opportunities during which the application offers new packets.
        public var opportunities: Int
        /// Groups rebuilt through ISA-L and compared byte for byte.
        public var verifyGroups: Int
        public var seed: UInt64
        /// Keep `LinkSimulator.sendLog`, one record per datagram sent (tests count groups from it).
        public var recordsLog = false
        /// Polled every 65 536 events; true stops the run, whose metrics are then marked interrupted.
        public var isCancelled: (@Sendable () -> Bool)?

        public init(level: FECLevel, arq: ARQConfiguration = ARQConfiguration(), traffic: TrafficPattern = .greedy,
                    symbolSize: Int = 512, headerBytes: Int = 14, feedbackEntryBytes: Int = 2, opportunities: Int,
                    verifyGroups: Int = 200, seed: UInt64) {
            self.level = level
            self.arq = arq
            self.traffic = traffic
            self.symbolSize = symbolSize
            self.headerBytes = headerBytes
            self.feedbackEntryBytes = feedbackEntryBytes
            self.opportunities = opportunities
            self.verifyGroups = verifyGroups
            self.seed = seed
        }
    }

    private struct Event: Comparable {
        var timeMs: Double
        /// payload << 2 | kind
        var tag: Int

        static func < (a: Event, b: Event) -> Bool { a.timeMs < b.timeMs || (a.timeMs == b.timeMs && a.tag < b.tag) }
    }

    /// Pending arrivals in time order. Most are sent in order with similar delays, so they arrive in
    /// order: those go to a FIFO, and only the ones that overtake go to the heap. Popping takes the
    /// smaller head of the two, so the order is exactly a single heap's, at a fraction of the cost.
    private struct EventQueue {
        private var fifo = Deque<Event>()
        private var heap = Heap<Event>()

        var min: Event? {
            guard let f = fifo.first else { return heap.min }
            guard let h = heap.min else { return f }
            return h < f ? h : f
        }

        mutating func insert(_ e: Event) {
            if let last = fifo.last, e < last { heap.insert(e) } else { fifo.append(e) }
        }

        mutating func removeMin() -> Event {
            if let f = fifo.first, heap.min.map({ !($0 < f) }) ?? true { return fifo.removeFirst() }
            return heap.removeMin()
        }
    }

    private enum EventKind {
        static let original = 0  // payload: seq << 1 | first transmission
        static let repair = 1  // payload: group
        static let feedback = 2  // payload: message id
    }

    private enum How: UInt8 {
        case pending, direct, fec, arq, lost
    }

    private struct FeedbackMessage {
        var sentMs = 0.0
        var cumulative = 0
        var ackStart = 0
        var ackCount = 0
        var nackStart = 0
        var nackCount = 0
    }

    /// One datagram on the data channel, as the sender emitted it.
    public struct SendRecord: Sendable, Equatable {
        public enum Kind: Sendable, Equatable { case original, repair, retransmission }
        public var kind: Kind
        public var timeMs: Double
        /// Sequence number (originals, retransmissions); -1 for repair symbols.
        public var seq: Int
        /// FEC group (-1 without FEC).
        public var group: Int
    }

    /// Every datagram sent, when `Settings.recordsLog` is set; empty otherwise.
    public private(set) var sendLog: [SendRecord] = []

    private let settings: Settings
    private var data: Channel
    private var feedbackChannel: Channel
    private var metrics = LinkMetrics()
    private var verifier: GroupVerifier
    private var framer: FECFramer
    private var rto: RTOEstimator
    private let packetBytes: Int

    /// Owns every ring buffer below; the simulator reads and writes them through raw pointers, so the
    /// hot loop pays no copy-on-write checks. A simulator is run once and never shared.
    private final class RingStorage {
        private var buffers: [UnsafeMutableRawPointer] = []

        func make<T>(_ count: Int, _ value: T) -> UnsafeMutablePointer<T> {
            let p = UnsafeMutablePointer<T>.allocate(capacity: count)
            p.initialize(repeating: value, count: count)
            buffers.append(UnsafeMutableRawPointer(p))
            return p
        }

        deinit { for b in buffers { b.deallocate() } }
    }

    private let storage = RingStorage()

    // Per sequence number (ring).
    private let mask: Int
    private let slotSeq: UnsafeMutablePointer<Int>
    private let offeredAt: UnsafeMutablePointer<Double>
    private let firstSentAt: UnsafeMutablePointer<Double>
    private let lastSentAt: UnsafeMutablePointer<Double>
    private let receivedAt: UnsafeMutablePointer<Double>
    private let transmissions: UnsafeMutablePointer<Int32>
    private let groupOf: UnsafeMutablePointer<Int>
    private let how: UnsafeMutablePointer<How>
    private let acked: UnsafeMutablePointer<Bool>
    private let buffered: UnsafeMutablePointer<Bool>
    private let queuedForRetransmission: UnsafeMutablePointer<UInt8>  // 0 no, 1 NACK, 2 RTO
    private let missingSince: UnsafeMutablePointer<Double>
    private let lastNackAt: UnsafeMutablePointer<Double>

    // Per group (ring, same size).
    private let groupSlot: UnsafeMutablePointer<Int>
    private let groupFirstSeq: UnsafeMutablePointer<Int>
    private let groupOriginals: UnsafeMutablePointer<Int32>  // 0 while open
    private let groupRepairs: UnsafeMutablePointer<Int32>
    private let groupHave: UnsafeMutablePointer<Int32>
    private let groupDone: UnsafeMutablePointer<Bool>
    private let groupFirstTxArrived: UnsafeMutablePointer<Int32>
    private let groupFirstTxLostOriginals: UnsafeMutablePointer<Int32>
    /// Erased symbol indices of the group now being sent (originals, then its repair symbols).
    private var erasures: [Int] = []

    // Clusters for the intervals: originals given up per cluster (rare, so a dictionary), and the open
    // block of originals when FEC is off.
    private var lostInCluster: [Int: (lost: Int, size: Int)] = [:]
    private var blockFilled = 0
    private var blockFirstLost = 0

    // Sender.
    private var nextSeq = 0
    private var senderBase = 0
    private var waiting = Deque<Double>()  // offer times of packets not yet sent
    private var repairQueue = Deque<Int>()  // group << 8 | repair index
    private var retransmitQueue = Deque<Int>()
    private var timers = Deque<(seq: Int, transmission: Int32, deadlineMs: Double)>()
    private var nextOfferMs = Double.infinity
    private let horizonMs: Double

    // Receiver.
    private var inOrder = 0
    private var highestSeen = -1
    private var bufferedCount = 0
    private var stallStartMs = Double.nan
    private var missing = Deque<Int>()
    private var feedbackWantMs = Double.infinity
    private var lastFeedbackMs = -Double.infinity
    private let entries: UnsafeMutablePointer<Int>
    private let entryMask: Int
    private var entryHead = 0
    private var pendingAckStart = 0
    private let messages: UnsafeMutablePointer<FeedbackMessage>
    private let messageMask: Int
    private var nextMessage = 0

    // Events.
    private var events = EventQueue()
    private var nowMs = 0.0
    private var rng: SplitMix64
    /// Draws the RaptorQ model's reception overhead per group (its own stream, so Reed-Solomon levels
    /// see the same traffic whether or not a RaptorQ level runs).
    private var receptionRNG: SplitMix64
    /// Symbols beyond k' a group needs before it decodes: 0 for Reed-Solomon (MDS); for the RaptorQ
    /// model h with P(h or more) = 256^-h, drawn when the group opens.
    private let groupExtra: UnsafeMutablePointer<Int32>

    public init(settings: Settings, data: Channel, feedback: Channel) {
        self.settings = settings
        self.data = data
        self.feedbackChannel = feedback
        verifier = GroupVerifier(limit: settings.level.isEnabled && settings.level.code == .reedSolomon ? settings.verifyGroups : 0,
                                 symbolSize: settings.symbolSize, seed: settings.seed)
        framer = FECFramer(level: settings.level)
        let a = settings.arq
        rto = RTOEstimator(initialMs: a.initialRTOMs, minimumMs: a.minRTOMs, maximumMs: a.maxRTOMs, backoffFactor: a.backoffFactor)
        packetBytes = settings.traffic.size ?? settings.symbolSize
        var capacity = 1024
        while capacity < 2 * (a.window + 2 * max(settings.level.k, 1)) + 64 { capacity <<= 1 }
        mask = capacity - 1
        slotSeq = storage.make(capacity, -1)
        offeredAt = storage.make(capacity, 0)
        firstSentAt = storage.make(capacity, 0)
        lastSentAt = storage.make(capacity, 0)
        receivedAt = storage.make(capacity, 0)
        transmissions = storage.make(capacity, 0)
        groupOf = storage.make(capacity, -1)
        how = storage.make(capacity, .pending)
        acked = storage.make(capacity, false)
        buffered = storage.make(capacity, false)
        queuedForRetransmission = storage.make(capacity, 0)
        missingSince = storage.make(capacity, -1)
        lastNackAt = storage.make(capacity, -1)
        groupSlot = storage.make(capacity, -1)
        groupFirstSeq = storage.make(capacity, -1)
        groupOriginals = storage.make(capacity, 0)
        groupRepairs = storage.make(capacity, 0)
        groupHave = storage.make(capacity, 0)
        groupDone = storage.make(capacity, false)
        groupFirstTxArrived = storage.make(capacity, 0)
        groupFirstTxLostOriginals = storage.make(capacity, 0)
        erasures.reserveCapacity(256)
        entries = storage.make(1 << 18, 0)
        entryMask = (1 << 18) - 1
        messages = storage.make(1 << 14, FeedbackMessage())
        messageMask = (1 << 14) - 1
        rng = SplitMix64(seed: settings.seed ^ 0x7AFF_1C00)
        receptionRNG = SplitMix64(seed: settings.seed ^ 0x0F0E_7A1C)
        groupExtra = storage.make(capacity, 0)
        horizonMs = data.timeOfOpportunity(after: settings.opportunities)
        if !settings.traffic.isGreedy { nextOfferMs = 0 }
    }

    /// Runs the transfer to its end: offers stop at the horizon, then every packet is delivered or given up.
    public mutating func run() -> LinkMetrics {
        var events = 0
        while step() {
            events &+= 1
            if events & 0xFFFF == 0, let cancelled = settings.isCancelled, cancelled() {
                metrics.interrupted = true
                break
            }
        }
        if !stallStartMs.isNaN {
            metrics.stalls.record(LinkMetrics.micros(nowMs - stallStartMs))
            stallStartMs = .nan
        }
        if blockFilled > 0 {
            metrics.residualFECClusters.record(events: blockFirstLost, of: blockFilled)
            metrics.lostClusters.addCluster(trials: blockFilled)
            blockFilled = 0
        }
        for (_, c) in lostInCluster { metrics.lostClusters.addEvents(c.lost, clusterOf: c.size) }
        lostInCluster = [:]
        data.finishReplay()
        metrics.channel = data.replayed
        metrics.opportunitiesPassed = data.passed
        metrics.opportunitiesUsed = data.used
        metrics.feedbackOpportunitiesUsed = feedbackChannel.used
        metrics.verification = verifier.tally
        return metrics
    }

    private var offering: Bool {
        settings.traffic.isGreedy ? data.passed < settings.opportunities : nextOfferMs < horizonMs
    }

    /// One event; false when the transfer is over.
    @inline(__always)
    private mutating func step() -> Bool {
        var best = Double.infinity
        var choice = 0
        if let e = events.min { best = e.timeMs; choice = 1 }
        // Timers of packets already acknowledged are dropped here rather than fired as events.
        while let t = timers.first, timerIsStale(t) { timers.removeFirst() }
        if let t = timers.first, t.deadlineMs < best { best = t.deadlineMs; choice = 2 }
        if let f = framer.flushDeadlineMs, f < best { best = f; choice = 3 }
        if !settings.traffic.isGreedy, nextOfferMs < horizonMs, nextOfferMs < best { best = nextOfferMs; choice = 4 }
        if feedbackWantMs < best {
            feedbackChannel.skip(before: nowMs)
            let at = max(feedbackWantMs, feedbackChannel.nextTimeMs)
            if at < best { best = at; choice = 5 }
        }
        if senderHasWork() {
            data.skip(before: nowMs)
            if data.nextTimeMs < best { best = data.nextTimeMs; choice = 6 }
        }
        guard choice != 0 else { return false }
        nowMs = max(nowMs, best)
        switch choice {
        case 1: handle(events.removeMin())
        case 2: expireTimer()
        case 3: if let closed = framer.flushIfDue(atMs: nowMs) { close(closed) }
        case 4: offer()
        case 5: sendFeedbackIfDue()
        default: sendOnData()
        }
        if !offering && senderBase == nextSeq && waiting.isEmpty && repairQueue.isEmpty && framer.flushDeadlineMs == nil {
            return false
        }
        return true
    }

    // MARK: Sender

    @inline(__always)
    private mutating func senderHasWork() -> Bool {
        while let seq = retransmitQueue.first, !needsRetransmission(seq) {
            queuedForRetransmission[seq & mask] = 0
            retransmitQueue.removeFirst()
        }
        if !retransmitQueue.isEmpty || !repairQueue.isEmpty { return true }
        guard nextSeq - senderBase < settings.arq.window else { return false }
        return settings.traffic.isGreedy ? data.passed < settings.opportunities : !waiting.isEmpty
    }

    @inline(__always)
    private func needsRetransmission(_ seq: Int) -> Bool {
        let s = seq & mask
        return slotSeq[s] == seq && !acked[s] && how[s] != .lost
    }

    private mutating func offer() {
        let count = settings.traffic.kind == .interactive ? settings.traffic.burst : 1
        for _ in 0..<count { waiting.append(nextOfferMs) }
        switch settings.traffic.kind {
        case .interactive:
            nextOfferMs += -log(1 - rng.unitInterval()) * settings.traffic.gapMs
        default:
            nextOfferMs += 1000 / (settings.traffic.rate ?? 1000)
        }
    }

    @inline(__always)
    private mutating func sendOnData() {
        let (t, delivered, delayMs) = data.take()
        metrics.dataPackets += 1
        metrics.dataBytes += packetBytes + settings.headerBytes
        if let seq = retransmitQueue.popFirst() {
            retransmit(seq, at: t, delivered: delivered, arrivalMs: t + delayMs)
        } else if let item = repairQueue.popFirst() {
            sendRepair(group: item >> 8, index: item & 0xFF, delivered: delivered, arrivalMs: t + delayMs)
        } else {
            sendOriginal(at: t, delivered: delivered, arrivalMs: t + delayMs)
        }
    }

    private mutating func sendOriginal(at t: Double, delivered: Bool, arrivalMs: Double) {
        let seq = nextSeq
        nextSeq += 1
        let s = seq & mask
        let offered = settings.traffic.isGreedy ? t : (waiting.popFirst() ?? t)
        slotSeq[s] = seq
        offeredAt[s] = offered
        firstSentAt[s] = t
        lastSentAt[s] = t
        receivedAt[s] = 0
        transmissions[s] = 1
        how[s] = .pending
        acked[s] = false
        buffered[s] = false
        queuedForRetransmission[s] = 0
        missingSince[s] = -1
        lastNackAt[s] = -1
        metrics.originals += 1
        if offered < metrics.firstOfferMs { metrics.firstOfferMs = offered }
        if !delivered { metrics.firstTransmissionsLost += 1 }

        let placed = framer.add(atMs: t)
        groupOf[s] = placed.group
        if placed.group >= 0 {
            let g = placed.group & mask
            if placed.index == 0 {
                groupSlot[g] = placed.group
                groupFirstSeq[g] = seq
                groupOriginals[g] = 0
                groupRepairs[g] = 0
                groupHave[g] = 0
                groupDone[g] = false
                groupFirstTxArrived[g] = 0
                groupFirstTxLostOriginals[g] = 0
                groupExtra[g] = settings.level.code == .raptorQModel ? receptionOverhead() : 0
                erasures.removeAll(keepingCapacity: true)
            }
            if delivered {
                groupFirstTxArrived[g] += 1
            } else {
                groupFirstTxLostOriginals[g] += 1
                erasures.append(placed.index)
            }
        } else {
            if !delivered {
                metrics.residualLostFEC += 1
                blockFirstLost += 1
            }
            blockFilled += 1
            if blockFilled == LinkMetrics.blockSize {
                metrics.residualFECClusters.record(events: blockFirstLost, of: blockFilled)
                metrics.lostClusters.addCluster(trials: blockFilled)
                blockFilled = 0
                blockFirstLost = 0
            }
        }
        if settings.recordsLog { sendLog.append(SendRecord(kind: .original, timeMs: t, seq: seq, group: placed.group)) }
        if delivered { events.insert(Event(timeMs: arrivalMs, tag: (seq << 1 | 1) << 2 | EventKind.original)) }
        armTimer(seq, transmission: 1, at: t)
        if let closed = placed.closed { close(closed) }
    }

    private mutating func close(_ closed: FECFramer.Closed) {
        let g = closed.group & mask
        groupOriginals[g] = Int32(closed.originals)
        groupRepairs[g] = Int32(closed.repairs)
        metrics.groups += 1
        if closed.byTimeout { metrics.groupsFlushed += 1 }
        if metrics.groupSizes.count <= closed.originals {
            metrics.groupSizes += Array(repeating: 0, count: closed.originals + 1 - metrics.groupSizes.count)
        }
        metrics.groupSizes[closed.originals] += 1
        metrics.lostClusters.addCluster(trials: closed.originals)
        for i in 0..<closed.repairs { repairQueue.append(closed.group << 8 | i) }
        // The receiver may already hold every original.
        tryRebuild(closed.group)
    }

    private mutating func sendRepair(group: Int, index: Int, delivered: Bool, arrivalMs: Double) {
        let g = group & mask
        metrics.repairSent += 1
        if settings.recordsLog { sendLog.append(SendRecord(kind: .repair, timeMs: nowMs, seq: -1, group: group)) }
        if delivered {
            groupFirstTxArrived[g] += 1
            events.insert(Event(timeMs: arrivalMs, tag: group << 2 | EventKind.repair))
        } else {
            erasures.append(Int(groupOriginals[g]) + index)
        }
        guard index == Int(groupRepairs[g]) - 1 else { return }
        // Every symbol of the group has been sent once: what FEC alone makes of it (the binomial check).
        let k = Int(groupOriginals[g])
        // With every original there, nothing needs decoding, whatever the code.
        let arrived = Int(groupFirstTxArrived[g])
        let failed = arrived < k || (groupFirstTxLostOriginals[g] > 0 && arrived < k + Int(groupExtra[g]))
        metrics.residualFECClusters.record(events: failed ? Int(groupFirstTxLostOriginals[g]) : 0, of: k)
        if failed {
            metrics.groupsFailedFEC += 1
            metrics.residualLostFEC += Int(groupFirstTxLostOriginals[g])
        } else if groupFirstTxLostOriginals[g] > 0, verifier.wantsMore {
            verifier.verify(k: k, m: Int(groupRepairs[g]), lost: erasures)
        }
    }

    private mutating func retransmit(_ seq: Int, at t: Double, delivered: Bool, arrivalMs: Double) {
        let s = seq & mask
        let reason = queuedForRetransmission[s]
        queuedForRetransmission[s] = 0
        metrics.retransmissions += 1
        if reason == 1 { metrics.retransmissionsByNACK += 1 } else { metrics.retransmissionsByRTO += 1 }
        if how[s] != .pending { metrics.retransmissionsSpurious += 1 }
        transmissions[s] += 1
        lastSentAt[s] = t
        if settings.recordsLog { sendLog.append(SendRecord(kind: .retransmission, timeMs: t, seq: seq, group: groupOf[s])) }
        if delivered { events.insert(Event(timeMs: arrivalMs, tag: (seq << 1) << 2 | EventKind.original)) }
        armTimer(seq, transmission: transmissions[s], at: t)
    }

    /// Per-packet timer: the RFC 6298 RTO, backed off by the factor for each earlier transmission of the
    /// same packet (KCP and MasterDnsVPN back off per packet, not per connection).
    @inline(__always)
    private mutating func armTimer(_ seq: Int, transmission: Int32, at t: Double) {
        guard settings.arq.enabled else {
            // FEC alone: the timer is the receiver's patience (RFC 7680 Tmax = the largest RTO).
            timers.append((seq, transmission, t + settings.arq.maxRTOMs))
            return
        }
        var timeout = rto.rtoMs
        if transmission > 1 {
            timeout = min(timeout * pow(settings.arq.backoffFactor, Double(transmission - 1)), settings.arq.maxRTOMs)
        }
        timers.append((seq, transmission, t + timeout))
    }

    @inline(__always)
    private func timerIsStale(_ timer: (seq: Int, transmission: Int32, deadlineMs: Double)) -> Bool {
        let s = timer.seq & mask
        return slotSeq[s] != timer.seq || acked[s] || how[s] == .lost || transmissions[s] != timer.transmission
    }

    private mutating func expireTimer() {
        let timer = timers.removeFirst()
        let s = timer.seq & mask
        guard slotSeq[s] == timer.seq, !acked[s], how[s] != .lost, transmissions[s] == timer.transmission else { return }
        metrics.timerExpiries += 1
        if !settings.arq.enabled || Int(transmissions[s]) > settings.arq.retryLimit {
            giveUp(timer.seq)
        } else if queuedForRetransmission[s] == 0 {
            queuedForRetransmission[s] = 2
            retransmitQueue.append(timer.seq)
        }
    }

    private mutating func giveUp(_ seq: Int) {
        let s = seq & mask
        acked[s] = true
        if how[s] == .pending {
            how[s] = .lost
            metrics.lost += 1
            // The cluster the interval counts it in: its FEC group, or its block of originals.
            let group = groupOf[s]
            if group >= 0 {
                let g = group & mask
                let size = groupSlot[g] == group && groupOriginals[g] > 0 ? Int(groupOriginals[g]) : settings.level.k
                lostInCluster[group, default: (0, size)].lost += 1
            } else {
                let block = seq / LinkMetrics.blockSize
                let size = min(LinkMetrics.blockSize, nextSeq - block * LinkMetrics.blockSize)
                lostInCluster[block, default: (0, max(size, 1))].lost += 1
            }
        }
        advanceSenderBase()
        if seq == inOrder { release() }
    }

    @inline(__always)
    private mutating func advanceSenderBase() {
        while senderBase < nextSeq && acked[senderBase & mask] { senderBase += 1 }
    }

    private mutating func receiveFeedback(_ id: Int) {
        let message = messages[id & messageMask]
        var i = message.ackStart
        for _ in 0..<message.ackCount {
            let seq = entries[i & entryMask]
            i += 1
            let s = seq & mask
            guard slotSeq[s] == seq, !acked[s] else { continue }
            acked[s] = true
            // Karn's rule (RFC 6298 section 3): only packets sent once give an RTT sample.
            if transmissions[s] == 1 { rto.sample(nowMs - firstSentAt[s]) }
        }
        var seq = senderBase
        while seq < message.cumulative && seq < nextSeq {
            acked[seq & mask] = true
            seq += 1
        }
        advanceSenderBase()
        i = message.nackStart
        let guardMs = rto.srttMs ?? settings.arq.minRTOMs
        for _ in 0..<message.nackCount {
            let seq = entries[i & entryMask]
            i += 1
            let s = seq & mask
            // A packet resent less than one smoothed RTT ago may still be on its way: do not resend again.
            guard slotSeq[s] == seq, !acked[s], how[s] != .lost, queuedForRetransmission[s] == 0,
                  nowMs - lastSentAt[s] >= guardMs else { continue }
            if Int(transmissions[s]) > settings.arq.retryLimit { continue }
            queuedForRetransmission[s] = 1
            retransmitQueue.append(seq)
        }
    }

    // MARK: Receiver

    private mutating func handle(_ event: Event) {
        let payload = event.tag >> 2
        switch event.tag & 3 {
        case EventKind.original: receiveOriginal(payload >> 1, firstTransmission: payload & 1 == 1)
        case EventKind.repair: receiveRepair(payload)
        default: receiveFeedback(payload)
        }
    }

    private mutating func receiveOriginal(_ seq: Int, firstTransmission: Bool) {
        let s = seq & mask
        guard slotSeq[s] == seq else { return }
        guard how[s] == .pending else {
            // A duplicate: acknowledged again, never counted as a recovery.
            if how[s] != .lost { queueAck(seq) }
            return
        }
        resolve(seq, as: firstTransmission ? .direct : .arq)
        if seq > highestSeen {
            let gap = seq - highestSeen - 1
            if gap > 0, settings.arq.enabled, settings.arq.nackMaxGap > 0, gap <= settings.arq.nackMaxGap {
                for m in (highestSeen + 1)..<seq where how[m & mask] == .pending && missingSince[m & mask] < 0 {
                    missingSince[m & mask] = nowMs
                    missing.append(m)
                }
                requestFeedback(at: nowMs + settings.arq.nackDelayMs)
            }
            highestSeen = seq
        }
        let group = groupOf[s]
        if group >= 0, groupSlot[group & mask] == group, !groupDone[group & mask] {
            groupHave[group & mask] += 1
            tryRebuild(group)
        }
        if seq == inOrder { release() }
    }

    private mutating func receiveRepair(_ group: Int) {
        let g = group & mask
        guard groupSlot[g] == group, !groupDone[g] else { return }
        groupHave[g] += 1
        tryRebuild(group)
    }

    /// Reed-Solomon (MDS): k' symbols of any kind rebuild every original of the group; the RaptorQ
    /// model needs the group's drawn overhead on top.
    private mutating func tryRebuild(_ group: Int) {
        let g = group & mask
        let k = Int(groupOriginals[g])
        guard k > 0, !groupDone[g], Int(groupHave[g]) >= k + Int(groupExtra[g]) else { return }
        groupDone[g] = true
        let first = groupFirstSeq[g]
        var rebuilt = 0
        for seq in first..<(first + k) where slotSeq[seq & mask] == seq && how[seq & mask] == .pending {
            resolve(seq, as: .fec)
            rebuilt += 1
        }
        metrics.repairUsed += rebuilt
        if inOrder >= first && inOrder < first + k { release() }
    }

    /// RaptorQ's reception overhead: the decoder that holds k + h symbols fails with probability
    /// 256^-(h+1), so the extra symbols a group needs are h with P(more than h) = 256^-(h+1).
    private mutating func receptionOverhead() -> Int32 {
        var h: Int32 = 0
        while h < 8, receptionRNG.unitInterval() < 1.0 / 256 { h += 1 }
        return h
    }

    /// First arrival of an original at the receiver, by whatever path.
    @inline(__always)
    private mutating func resolve(_ seq: Int, as path: How) {
        let s = seq & mask
        how[s] = path
        receivedAt[s] = nowMs
        switch path {
        case .direct: metrics.deliveredDirect += 1
        case .fec: metrics.rebuiltByFEC += 1
        default: metrics.repairedByARQ += 1
        }
        metrics.delay.record(LinkMetrics.micros(nowMs - offeredAt[s]))
        if !settings.arq.enabled {
            // No feedback without ARQ; the window still bounds what is in flight (an oracle ACK).
            acked[s] = true
            advanceSenderBase()
        }
        queueAck(seq)
        if seq > inOrder {
            buffered[s] = true
            bufferedCount += 1
            if stallStartMs.isNaN { stallStartMs = nowMs }
        }
    }

    /// Releases every packet from the in-order point on that has arrived or been given up.
    private mutating func release() {
        let start = inOrder
        while inOrder < nextSeq {
            let s = inOrder & mask
            guard slotSeq[s] == inOrder, how[s] != .pending else { break }
            if how[s] != .lost {
                metrics.inOrderDelay.record(LinkMetrics.micros(nowMs - offeredAt[s]))
                let held = nowMs - receivedAt[s]
                if held > 0 { metrics.headOfLine.record(LinkMetrics.micros(held)) }
                metrics.usefulBytes += packetBytes
                metrics.lastReleaseMs = nowMs
            }
            if buffered[s] {
                buffered[s] = false
                bufferedCount -= 1
            }
            inOrder += 1
        }
        // A stall is one episode of the application getting nothing while data waits behind a missing
        // packet; it ends when the head of line moves, and a new one starts if data still waits.
        guard inOrder > start, !stallStartMs.isNaN else { return }
        metrics.stalls.record(LinkMetrics.micros(nowMs - stallStartMs))
        stallStartMs = bufferedCount > 0 ? nowMs : .nan
    }

    @inline(__always)
    private mutating func queueAck(_ seq: Int) {
        guard settings.arq.enabled else { return }
        entries[entryHead & entryMask] = seq
        entryHead += 1
        requestFeedback(at: nowMs)
    }

    @inline(__always)
    private mutating func requestFeedback(at t: Double) {
        let at = max(t, lastFeedbackMs + settings.arq.ackIntervalMs)
        if at < feedbackWantMs { feedbackWantMs = at }
    }

    private mutating func sendFeedbackIfDue() {
        feedbackChannel.skip(before: nowMs)
        guard feedbackChannel.nextTimeMs <= nowMs + 1e-9, nowMs >= feedbackWantMs else { return }
        feedbackWantMs = .infinity
        let acks = entryHead - pendingAckStart
        // NACKs: gaps older than the NACK delay, not NACKed within the repeat interval, at most max-gap of them.
        let nackStart = entryHead
        var nacks = 0
        var nextDue = Double.infinity
        while let m = missing.first, how[m & mask] != .pending || slotSeq[m & mask] != m {
            missing.removeFirst()
        }
        for m in missing {
            let s = m & mask
            guard slotSeq[s] == m, how[s] == .pending else { continue }
            let due = lastNackAt[s] < 0 ? missingSince[s] + settings.arq.nackDelayMs : lastNackAt[s] + settings.arq.nackRepeatMs
            if due <= nowMs && nacks < settings.arq.nackMaxGap {
                entries[entryHead & entryMask] = m
                entryHead += 1
                nacks += 1
                lastNackAt[s] = nowMs
                nextDue = min(nextDue, nowMs + settings.arq.nackRepeatMs)
            } else {
                nextDue = min(nextDue, max(due, nowMs + settings.arq.ackIntervalMs))
            }
        }
        if acks > 0 || nacks > 0 {
            let (t, delivered, delayMs) = feedbackChannel.take()
            let id = nextMessage
            nextMessage += 1
            messages[id & messageMask] = FeedbackMessage(sentMs: t, cumulative: inOrder, ackStart: pendingAckStart, ackCount: acks,
                                                         nackStart: nackStart, nackCount: nacks)
            pendingAckStart = entryHead
            lastFeedbackMs = t
            metrics.feedbackMessages += 1
            metrics.ackEntries += acks
            metrics.nackEntries += nacks
            metrics.feedbackBytes += settings.headerBytes + 4 + settings.feedbackEntryBytes * (acks + nacks)
            if delivered {
                events.insert(Event(timeMs: t + delayMs, tag: id << 2 | EventKind.feedback))
            } else {
                metrics.feedbackLost += 1
            }
        }
        if nextDue.isFinite { requestFeedback(at: nextDue) }
    }
}
