public import Base
public import Histogram

/// What one level did in one run (or, merged, in all runs): counts, bytes and delay histograms.
///
/// Histograms hold microseconds. Every rate is derived later from these counts, with its sample size.
public struct LinkMetrics: Sendable {
    // Originals, by how they reached the receiver first.
    public var originals = 0
    public var deliveredDirect = 0
    public var rebuiltByFEC = 0
    public var repairedByARQ = 0
    /// The sender gave up after its retry limit.
    public var lost = 0

    // FEC alone: what the first transmissions and the repair symbols could do without any ARQ.
    public var firstTransmissionsLost = 0
    public var residualLostFEC = 0
    public var groups = 0
    public var groupsFailedFEC = 0
    public var groupsFlushed = 0
    public var repairSent = 0
    /// Repair symbols that stood in for a lost original in a group the receiver rebuilt.
    public var repairUsed = 0

    // ARQ.
    public var retransmissions = 0
    public var retransmissionsByNACK = 0
    public var retransmissionsByRTO = 0
    /// Retransmissions sent when the receiver already had the packet.
    public var retransmissionsSpurious = 0
    public var timerExpiries = 0
    public var feedbackMessages = 0
    public var feedbackLost = 0
    public var ackEntries = 0
    public var nackEntries = 0

    // Bytes.
    public var dataPackets = 0
    public var dataBytes = 0
    public var feedbackBytes = 0
    public var usefulBytes = 0

    // Time.
    public var firstOfferMs = Double.infinity
    public var lastReleaseMs = 0.0
    public var opportunitiesPassed = 0
    public var opportunitiesUsed = 0
    public var feedbackOpportunitiesUsed = 0

    /// Offer to first arrival at the receiver (direct, rebuilt or retransmitted).
    public var delay = LinkMetrics.histogram()
    /// Offer to in-order release to the application.
    public var inOrderDelay = LinkMetrics.histogram()
    /// Time a packet waited in the reorder buffer behind a missing one (only packets that waited).
    public var headOfLine = LinkMetrics.histogram()
    /// Lengths of the periods in which the receiver held data it could not release.
    public var stalls = LinkMetrics.histogram()

    /// Groups as they closed: `groupSizes[k']` = groups closed with k' originals (index 0 unused).
    public var groupSizes: [Int] = []
    /// Residual loss after FEC alone, by cluster (FEC groups; blocks of `blockSize` originals without FEC).
    public var residualFECClusters = ClusteredProportion()
    /// Originals given up, by the same clusters.
    public var lostClusters = ClusteredProportion()
    /// What the data channel did to the datagrams sent (every kind), as sent.
    public var channel = LossRunCounts()

    /// Clusters of originals that stand in for groups when FEC is off (the largest preset group).
    public static let blockSize = 16

    public var verification = GroupVerifier.Tally()
    /// The run was stopped (SIGINT) before it finished; its figures are partial.
    public var interrupted = false

    public init() {}

    /// 1 us to 1 hour at 3 significant digits.
    public static func histogram() -> Histogram<UInt64> {
        Histogram<UInt64>(lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000, numberOfSignificantValueDigits: .three)
    }

    @inline(__always)
    static func micros(_ ms: Double) -> UInt64 {
        ms <= 0 ? 0 : UInt64(min(ms * 1000, 3_600_000_000) + 0.5)
    }

    public mutating func add(_ o: LinkMetrics) {
        originals += o.originals
        deliveredDirect += o.deliveredDirect
        rebuiltByFEC += o.rebuiltByFEC
        repairedByARQ += o.repairedByARQ
        lost += o.lost
        firstTransmissionsLost += o.firstTransmissionsLost
        residualLostFEC += o.residualLostFEC
        groups += o.groups
        groupsFailedFEC += o.groupsFailedFEC
        groupsFlushed += o.groupsFlushed
        repairSent += o.repairSent
        repairUsed += o.repairUsed
        retransmissions += o.retransmissions
        retransmissionsByNACK += o.retransmissionsByNACK
        retransmissionsByRTO += o.retransmissionsByRTO
        retransmissionsSpurious += o.retransmissionsSpurious
        timerExpiries += o.timerExpiries
        feedbackMessages += o.feedbackMessages
        feedbackLost += o.feedbackLost
        ackEntries += o.ackEntries
        nackEntries += o.nackEntries
        dataPackets += o.dataPackets
        dataBytes += o.dataBytes
        feedbackBytes += o.feedbackBytes
        usefulBytes += o.usefulBytes
        // Runs are separate transfers: their durations add up.
        if o.firstOfferMs.isFinite {
            let mine = firstOfferMs.isFinite ? lastReleaseMs - firstOfferMs : 0
            firstOfferMs = 0
            lastReleaseMs = mine + (o.lastReleaseMs - o.firstOfferMs)
        }
        opportunitiesPassed += o.opportunitiesPassed
        opportunitiesUsed += o.opportunitiesUsed
        feedbackOpportunitiesUsed += o.feedbackOpportunitiesUsed
        delay.add(o.delay)
        inOrderDelay.add(o.inOrderDelay)
        headOfLine.add(o.headOfLine)
        stalls.add(o.stalls)
        verification.add(o.verification)
        if groupSizes.count < o.groupSizes.count { groupSizes += Array(repeating: 0, count: o.groupSizes.count - groupSizes.count) }
        for (i, c) in o.groupSizes.enumerated() { groupSizes[i] += c }
        residualFECClusters.add(o.residualFECClusters)
        lostClusters.add(o.lostClusters)
        channel.add(o.channel)
        interrupted = interrupted || o.interrupted
    }
}

extension LinkMetrics {
    /// Bytes on the wire (data, repair, retransmissions, feedback, headers) per useful byte delivered;
    /// nil when nothing was delivered.
    public var overhead: Double? {
        usefulBytes > 0 ? Double(dataBytes + feedbackBytes) / Double(usefulBytes) : nil
    }

    /// Useful bytes per second from the first offer to the last release; nil when nothing was delivered.
    public var goodputBytesPerSecond: Double? {
        let duration = lastReleaseMs - (firstOfferMs.isFinite ? firstOfferMs : 0)
        return duration > 0 && usefulBytes > 0 ? Double(usefulBytes) / (duration / 1000) : nil
    }

    /// Sum of every stall, ms.
    public var stallTotalMs: Double {
        var total = 0.0
        for v in stalls.recordedValues() { total += Double(v.value) * Double(v.count) / 1000 }
        return total
    }

    /// The longest stall, ms (0 without any).
    public var stallMaxMs: Double { stalls.totalCount > 0 ? Double(stalls.max) / 1000 : 0 }

    /// In-order delivery delay p99, ms; nil below 100 samples.
    public var inOrderP99Ms: Double? {
        inOrderDelay.totalCount >= 100 ? Double(inOrderDelay.valueAtPercentile(99)) / 1000 : nil
    }

    /// Mean originals per closed group; nil without groups.
    public var meanGroupOriginals: Double? {
        let n = groupSizes.reduce(0, +)
        guard n > 0 else { return nil }
        return Double(groupSizes.enumerated().reduce(0) { $0 + $1.offset * $1.element }) / Double(n)
    }
}
