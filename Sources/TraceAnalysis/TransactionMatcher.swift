import DequeModule

/// The transaction half of the analysis: matches the queries and responses `TraceFrontEnd` extracted
/// and keeps the aggregates (docs/TRACE.md, "Matching").
///
/// A transaction is (client address and port, resolver address and port, DNS id, question name
/// case-folded, type). A query whose transaction is still pending is a retransmission: it joins the
/// first query, whose send time the RTT is measured from (as tshark's `dns.time`). The first response
/// within Tmax answers it; later ones up to Tmax after the query are duplicates. After Tmax a pending
/// transaction is lost (RFC 7680) and moves to a table of recent losses, so a response up to
/// `lateWindow` later is counted late.
///
/// Memory: transactions live in a send-order ring until Tmax after their query, lost ones until the end
/// of their late window; aggregates are histograms. Memory follows the query rate times Tmax, never
/// the number of answered queries.
struct TransactionMatcher {
    let options: TraceOptions

    private struct LostExpiry {
        var at: Int64
        var key: TransactionKey
        var serial: UInt64
    }

    private var window = TransactionWindow()
    /// Lost transactions in their late window, and the order in which that window ends.
    private var lost: [TransactionKey: (transaction: Transaction, serial: UInt64)] = [:]
    private var lostQueue = Deque<LostExpiry>()
    private var now: Int64 = .min
    /// `expire` has nothing to do until `now` passes this (the oldest transaction's Tmax, the oldest
    /// loss's late window): one comparison per event instead of a look at both queues.
    private var expiryDue: Int64 = .max

    /// Per resolver: what only the resolver has (reordering on its query order, unmatched responses),
    /// and the counts of the overflow group. The rest is its groups' sum (`resolverTotals`).
    private var resolverMetrics: [TraceMetrics] = []
    private var groupIndex = HashIndex(capacity: 64)
    private(set) var groupKeys: [(resolver: Int32, domain: Int32, qtype: UInt16)] = []
    private(set) var groupMetrics: [TraceMetrics] = []
    /// The group that absorbs every resolver x domain x type past `maxGroups`.
    private let overflowGroup: Int32
    /// Per domain, the queries of the overflow group (the other groups name their domain): all of them,
    /// those for NULL or PRIVATE (iodine), and for TXT; what `kind` needs.
    private var overflowDomainQueries: [Int] = []
    private var overflowDomainNullQueries: [Int] = []
    private var overflowDomainTXTQueries: [Int] = []
    /// The groups last used, by packed key (a direct-mapped cache in front of `groupIndex`).
    private var recentGroupKeys = [UInt64](repeating: .max, count: 16)
    private var recentGroups = [Int32](repeating: 0, count: 16)

    private(set) var fates = FateRecorder()

    init(options: TraceOptions) {
        self.options = options
        overflowGroup = Int32(options.maxGroups - 1)
    }

    /// The memory held right now (transactions pending, recently answered, recently lost).
    var openTransactions: Int { window.count + lost.count }

    /// A batch of events. The index is larger than the cache: the index slots of the lookup `lookahead`
    /// events ahead, and of the transactions about to leave the window, are prefetched while the
    /// matching goes on, so that each lookup finds its slot in the cache (a load per slot, as before,
    /// stalled the loop on every miss; nothing waits for a prefetch).
    mutating func events(_ events: UnsafeBufferPointer<TraceEvent>) {
        window.own()
        let n = events.count
        for i in 0..<min(n, Self.lookahead) { window.prefetch(events[i].hash) }
        for i in 0..<n {
            if i + Self.lookahead < n { window.prefetch(events[i + Self.lookahead].hash) }
            window.prefetchOldest(ahead: Self.lookahead)
            event(events[i])
        }
        flushRTTs()
    }

    /// Events (and departing transactions) whose index slots are asked for ahead of their turn: enough
    /// to cover a memory latency at the matcher's pace (about 100 ns an event).
    static let lookahead = 16

    // RTTs go into the histograms in batches: a histogram's counters (20-90 KiB each) leave the
    // nearest caches between two responses, and one increment at a time waited for each line; a run
    // of independent increments overlaps the misses. The histograms hold the same counts either way
    // (addition commutes); every batch is recorded before `events` returns.
    static let rttBatch = 256
    private var rttTargets = [Int32](repeating: 0, count: TransactionMatcher.rttBatch)
    private var rttValues = [Int64](repeating: 0, count: TransactionMatcher.rttBatch)
    private var rttCount = 0

    /// An RTT for group `g`'s histogram, or with `resolver` for resolver `r`'s own (the overflow group).
    @inline(__always) private mutating func recordRTT(_ rtt: Int64, group g: Int32, resolver r: Int32? = nil) {
        if rttCount == Self.rttBatch { flushRTTs() }
        rttTargets[rttCount] = r.map { -1 - $0 } ?? g
        rttValues[rttCount] = rtt
        rttCount += 1
    }

    private mutating func flushRTTs() {
        for k in 0..<rttCount {
            let target = rttTargets[k]
            if target >= 0 {
                groupMetrics[Int(target)].recordRTT(nanoseconds: rttValues[k])
            } else {
                resolverMetrics[Int(-1 - target)].recordRTT(nanoseconds: rttValues[k])
            }
        }
        rttCount = 0
    }

    @inline(__always)
    mutating func event(_ e: TraceEvent) {
        if e.time > now {
            now = e.time
            if now > expiryDue { expire() }
        }
        switch e.kind {
        case .tick: return
        case .query: query(e)
        case .response: response(e)
        }
    }

    private mutating func metricsFor(resolver r: Int32) {
        while resolverMetrics.count <= Int(r) { resolverMetrics.append(TraceMetrics()) }
    }

    private mutating func group(resolver: Int32, domain: Int32, qtype: UInt16) -> Int32 {
        let packed = UInt64(UInt32(bitPattern: resolver)) << 32 | UInt64(UInt16(truncatingIfNeeded: domain)) << 16 | UInt64(qtype)
        let line = Int(truncatingIfNeeded: (packed &* 0x9e37_79b9_7f4a_7c15) >> 60)
        if recentGroupKeys[line] == packed { return recentGroups[line] }
        if let known = groupIndex.find(packed) {
            recentGroupKeys[line] = packed
            recentGroups[line] = known
            return known
        }
        guard groupKeys.count < options.maxGroups else { return Int32(options.maxGroups - 1) }
        let index = Int32(groupKeys.count)
        groupIndex.insert(packed, index)
        groupKeys.append((resolver, domain, qtype))
        groupMetrics.append(TraceMetrics())
        return index
    }

    private mutating func query(_ e: TraceEvent) {
        let size = Int(e.size)
        let r = e.key.resolver
        if Int(r) >= resolverMetrics.count { metricsFor(resolver: r) }
        if let serial = window.find(e.key, hash: e.hash) {
            let known = window[serial]
            if known.state == .pending {
                // Same id and question while unanswered: a retransmission joins the first query (as tshark).
                update(r, known.group) { $0.retransmissions += 1 }
                return
            }
            window.retire(serial)  // the id and question are reused by a new transaction
        }
        let d = e.domain
        let qtype = e.key.qtype
        let g = group(resolver: r, domain: d, qtype: qtype)
        if g == overflowGroup { overflowQuery(domain: d, qtype: qtype) }
        let fate = options.recordFates ? fates.query(resolver: r, domain: d, sent: e.time, size: size) : -1
        let transaction = Transaction(sent: e.time, group: g,
                                      resolverSequence: resolverMetrics[Int(r)].takeSequence(),
                                      groupSequence: groupMetrics[Int(g)].takeSequence(), fate: fate)
        window.append(e.key, hash: e.hash, transaction)
        if window.count == 1 { expiryDue = min(expiryDue, Self.plus(e.time, options.tmaxNanos)) }
        update(r, g) { m in
            m.queries += 1
            m.querySizes.record(size)
        }
    }

    private mutating func overflowQuery(domain d: Int32, qtype: UInt16) {
        while Int(d) >= overflowDomainQueries.count {
            overflowDomainQueries.append(0)
            overflowDomainNullQueries.append(0)
            overflowDomainTXTQueries.append(0)
        }
        overflowDomainQueries[Int(d)] += 1
        if qtype == 10 || qtype == 65399 { overflowDomainNullQueries[Int(d)] += 1 }
        if qtype == 16 { overflowDomainTXTQueries[Int(d)] += 1 }
    }

    private mutating func response(_ e: TraceEvent) {
        let size = Int(e.size)
        let r = e.key.resolver
        if Int(r) >= resolverMetrics.count { metricsFor(resolver: r) }
        if let serial = window.find(e.key, hash: e.hash) {
            var t = window[serial]
            if t.state == .pending {
                let rtt = e.time - t.sent
                update(r, t.group) { m in
                    m.answered += 1
                    m.responseSizes.record(size)
                    m.rcodes[Int(e.rcode)] += 1
                    if e.truncated { m.truncated += 1 }
                    if e.snapCut { m.snapTruncated += 1 }
                }
                // The RTT goes into the group's histogram only; a resolver's is the sum of its groups' at
                // report time (one HdrHistogram record per response), except for the group that absorbs
                // the overflow of several resolvers (`maxGroups`), recorded in the resolver's own.
                recordRTT(rtt, group: t.group)
                if t.group == overflowGroup { recordRTT(rtt, group: t.group, resolver: r) }
                resolverMetrics[Int(r)].arrival(sequence: t.resolverSequence)
                groupMetrics[Int(t.group)].arrival(sequence: t.groupSequence)
                if t.fate >= 0 { fates.delivered(t.fate, delay: rtt) }
                t.state = .answered
                window[serial] = t
            } else {
                update(r, t.group) { $0.duplicates += 1 }
                if t.fate >= 0 { fates.copy(t.fate) }
            }
        } else if !lost.isEmpty, let known = lost[e.key] {
            var t = known.transaction
            if t.state == .lost {
                update(r, t.group) { m in
                    m.late += 1
                    m.responseSizes.record(size)
                    m.rcodes[Int(e.rcode)] += 1
                    if e.truncated { m.truncated += 1 }
                    if e.snapCut { m.snapTruncated += 1 }
                }
                resolverMetrics[Int(r)].arrival(sequence: t.resolverSequence)
                groupMetrics[Int(t.group)].arrival(sequence: t.groupSequence)
                t.state = .late
                lost[e.key] = (t, known.serial)
            } else {
                update(r, t.group) { $0.duplicates += 1 }
            }
        } else {
            resolverMetrics[Int(r)].unmatchedResponses += 1
        }
    }

    /// Counts go to the group only; a resolver's are the sum of its groups' (`resolverTotals`), except
    /// for the overflow group, which several resolvers share: its counts go to the resolver as well.
    @inline(__always) private mutating func update(_ r: Int32, _ g: Int32, _ change: (inout TraceMetrics) -> Void) {
        if g == overflowGroup { change(&resolverMetrics[Int(r)]) }
        change(&groupMetrics[Int(g)])
    }

    /// Per resolver (`count` of them): its own metrics plus its groups' counts and RTTs.
    func resolverTotals(count: Int) -> [TraceMetrics] {
        var totals = resolverMetrics
        while totals.count < count { totals.append(TraceMetrics()) }
        for g in groupKeys.indices where Int32(g) != overflowGroup {
            totals[Int(groupKeys[g].resolver)].addCounts(groupMetrics[g])
            totals[Int(groupKeys[g].resolver)].addRTT(groupMetrics[g].rtt)
        }
        return totals
    }

    /// Per domain (`count` of them): queries, queries for NULL or PRIVATE, queries for TXT.
    func domainQueries(count: Int) -> [(all: Int, null: Int, txt: Int)] {
        var out = (0..<count).map { d in
            d < overflowDomainQueries.count
                ? (all: overflowDomainQueries[d], null: overflowDomainNullQueries[d], txt: overflowDomainTXTQueries[d])
                : (all: 0, null: 0, txt: 0)
        }
        for g in groupKeys.indices where Int32(g) != overflowGroup {
            let d = Int(groupKeys[g].domain), q = groupMetrics[g].queries, qtype = groupKeys[g].qtype
            out[d].all += q
            if qtype == 10 || qtype == 65399 { out[d].null += q }
            if qtype == 16 { out[d].txt += q }
        }
        return out
    }

    /// Ends the Tmax window of transactions sent more than Tmax ago (pending ones are lost, RFC 7680;
    /// answered ones are forgotten, so a duplicate is recognised until Tmax after its query), and the
    /// late window of lost ones.
    private mutating func expire() {
        while let sent = window.oldestSent, Self.plus(sent, options.tmaxNanos) < now {
            guard let (entry, serial) = window.removeOldest() else { break }
            var t = entry.transaction
            guard t.state == .pending else { continue }
            // The transaction's own resolver (the key's): the overflow group's owner may be another one.
            update(entry.key.resolver, t.group) { $0.lost += 1 }
            if entry.indexed {
                t.state = .lost
                lost[entry.key] = (t, serial)
                lostQueue.append(LostExpiry(at: Self.plus(t.sent, options.tmaxNanos), key: entry.key, serial: serial))
            }
        }
        while let head = lostQueue.first, Self.plus(head.at, options.lateWindowNanos) < now {
            lostQueue.removeFirst()
            if lost[head.key]?.serial == head.serial { lost[head.key] = nil }
        }
        expiryDue = min(window.oldestSent.map { Self.plus($0, options.tmaxNanos) } ?? .max,
                        lostQueue.first.map { Self.plus($0.at, options.lateWindowNanos) } ?? .max)
    }

    /// Capture time plus a duration, saturating: a timestamp near 2262 (the end of Int64 nanoseconds)
    /// plus Tmax must not trap.
    @inline(__always) static func plus(_ time: Int64, _ duration: Int64) -> Int64 {
        let (sum, overflow) = time.addingReportingOverflow(duration)
        return overflow ? (duration > 0 ? .max : .min) : sum
    }

    /// Ends the analysis: every query still waiting is lost (no response by the end of the capture).
    /// The window is emptied in one pass, without taking each transaction out of the index.
    mutating func finish() {
        for k in 0..<window.count {
            let entry = window.entry(k)
            if entry.transaction.state == .pending { update(entry.key.resolver, entry.transaction.group) { $0.lost += 1 } }
        }
        window.own()
        window.removeAll()
        lost.removeAll()
        lostQueue.removeAll()
        expiryDue = .max
    }
}
