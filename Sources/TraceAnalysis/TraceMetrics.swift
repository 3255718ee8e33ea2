import Histogram

/// Counters of one aggregate (a resolver, or a resolver x tunnel domain x record type group). Memory is
/// fixed per aggregate: histograms, not lists, whatever the number of transactions.
struct TraceMetrics {
    /// Distinct query transactions (client, resolver, id, question); a retransmission is not a new one.
    var queries = 0
    /// Queries sent again with the same id and question while the first was unanswered.
    var retransmissions = 0
    /// First responses within Tmax.
    var answered = 0
    /// Transactions without a response within Tmax (RFC 7680 section 2.4), late ones included.
    var lost = 0
    /// Lost transactions whose response came after Tmax but within the late window.
    var late = 0
    /// Responses to a transaction that already had one (resolver retries, duplication). Never a recovered loss.
    var duplicates = 0
    /// Responses with no query in the capture (the capture started after it, or a spoofed answer).
    var unmatchedResponses = 0
    /// RFC 4737 section 4.1: responses whose query's sequence number is below NextExp.
    var reordered = 0
    var nextExpected: UInt32 = 0
    /// Query-order sequence numbers handed out (RFC 4737 needs one per query, in send order).
    var nextSequence: UInt32 = 0
    var truncated = 0
    /// Responses received (answered or late) whose capture the snap length cut after their question:
    /// matched, counted, their size the one on the wire.
    var snapTruncated = 0
    var rcodes = [Int](repeating: 0, count: 16)
    var rtt: Histogram<UInt32>?
    var querySizes = SizeHistogram()
    var responseSizes = SizeHistogram()

    /// RTT in microseconds, 1 us to 60 s, three significant digits (HdrHistogram: 0.1% value precision).
    mutating func recordRTT(nanoseconds: Int64) {
        let micros = UInt64(max(1, min(60_000_000, nanoseconds / 1_000)))
        // In place: no copy of the histogram (nor a generic nil test) per response.
        if _fastPath(rtt?.record(micros) != nil) { return }
        var histogram = Histogram<UInt32>(lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)
        _ = histogram.record(micros)
        rtt = histogram
    }

    /// RFC 4737 section 4.1 (Type-P-Reordered): a packet is in order when its sequence number is at least
    /// NextExp, which then becomes seq + 1; otherwise it is reordered.
    mutating func arrival(sequence: UInt32) {
        if sequence >= nextExpected {
            nextExpected = sequence &+ 1
        } else {
            reordered += 1
        }
    }

    mutating func takeSequence() -> UInt32 {
        defer { nextSequence &+= 1 }
        return nextSequence
    }
}

/// Message sizes in 32-byte buckets up to 4 KiB and one bucket above; fixed memory.
struct SizeHistogram {
    static let width = 32
    static let buckets = 4096 / width
    var counts = [Int](repeating: 0, count: buckets + 1)

    mutating func record(_ size: Int) {
        counts[min(Self.buckets, max(0, size) / Self.width)] += 1
    }
}

extension TraceMetrics {
    /// Adds another aggregate's counts (for the all-resolver totals). Reordering is per resolver and
    /// is summed, not recomputed across resolvers.
    mutating func merge(_ o: TraceMetrics) {
        addCounts(o)
        reordered += o.reordered
        addRTT(o.rtt)
    }

    /// Adds a group's counts into its resolver's: everything but reordering (RFC 4737 counts on the
    /// resolver's own query order, kept apart) and the RTT histogram (`addRTT`).
    mutating func addCounts(_ o: TraceMetrics) {
        queries += o.queries
        retransmissions += o.retransmissions
        answered += o.answered
        lost += o.lost
        late += o.late
        duplicates += o.duplicates
        unmatchedResponses += o.unmatchedResponses
        truncated += o.truncated
        snapTruncated += o.snapTruncated
        for i in rcodes.indices { rcodes[i] += o.rcodes[i] }
        querySizes.add(o.querySizes)
        responseSizes.add(o.responseSizes)
    }

    /// Adds another RTT histogram (same configuration: the sum is exact, bucket by bucket).
    mutating func addRTT(_ other: Histogram<UInt32>?) {
        guard let other else { return }
        if rtt == nil { rtt = other } else { rtt?.add(other) }
    }
}

extension SizeHistogram {
    mutating func add(_ o: SizeHistogram) {
        for i in counts.indices { counts[i] += o.counts[i] }
    }
}
