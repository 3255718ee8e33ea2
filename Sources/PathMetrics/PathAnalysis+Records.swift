public import Results

extension PathAnalysis {
    /// - Parameters:
    ///   - records: one per sent probe, in sequence order.
    ///   - tmaxNanos: RFC 7680 Tmax.
    ///   - clockOriginMicros: the wall clock (microseconds since the Unix epoch) at `sentNanos == 0`, when
    ///     the client and the responder share a clock; enables one-way delays.
    public init(records: [PathRecord], tmaxNanos: UInt64, clockOriginMicros: UInt64? = nil) {
        var c = Counts()
        c.sent = records.count
        var fates: [PathFate] = []
        fates.reserveCapacity(records.count)
        var upTrace: [Bool] = [], downTrace: [Bool] = [], roundTrace: [Bool] = []
        var rtts: [UInt64] = []
        var delaysInSeq: [UInt64?] = []
        var delivered: [(seq: UInt64, sent: UInt64, arrival: UInt64, index: UInt64?)] = []
        var upOrder: [(index: UInt64, seq: UInt64)] = []
        var seenUp = 0, duplicatedUp = 0, duplicatedDown = 0, answeredAny = 0
        var oneWayUp: [UInt64] = [], oneWayDown: [UInt64] = []
        for r in records {
            let copies = r.view?.copies ?? 0
            c.otherResponses += r.otherResponses
            if copies > 0 {
                seenUp += 1
                c.duplicatesUp += copies - 1
                if copies > 1 { duplicatedUp += 1 }
                if let index = r.view?.arrivalIndex { upOrder.append((index, r.seq)) }
            }
            if !r.arrivals.isEmpty {
                answeredAny += 1
                c.duplicatesDown += r.arrivals.count - 1
                if r.arrivals.count > 1 { duplicatedDown += 1 }
            }
            let first = r.arrivals.first
            let fate: PathFate
            if let first, first >= r.sentNanos, first - r.sentNanos <= tmaxNanos {
                fate = .delivered
                c.answered += 1
                rtts.append(first - r.sentNanos)
                delaysInSeq.append(first - r.sentNanos)
                delivered.append((r.seq, r.sentNanos, first, r.view?.arrivalIndex))
                if let origin = clockOriginMicros, let rx = r.view?.receivedMicros {
                    let sentWall = origin + r.sentNanos / 1000
                    let arrivedWall = origin + first / 1000
                    if rx >= sentWall { oneWayUp.append((rx - sentWall) * 1000) }
                    if arrivedWall >= rx { oneWayDown.append((arrivedWall - rx) * 1000) }
                }
            } else {
                delaysInSeq.append(nil)
                if first != nil { c.late += 1 }
                if copies > 0 || first != nil {
                    fate = .lostDown
                    c.lostDown += 1
                } else if r.view != nil {
                    fate = .lostUp
                    c.lostUp += 1
                } else {
                    fate = .lostUnknown
                    c.lostUnknown += 1
                }
            }
            fates.append(fate)
            roundTrace.append(fate != .delivered)
            if fate != .lostUnknown { upTrace.append(fate == .lostUp) }
            if fate == .delivered || fate == .lostDown { downTrace.append(fate == .lostDown) }
        }
        // RFC 7680 section 2.4 loss per direction; the up samples exclude probes whose fate upstream is unknown.
        let loss = PerDirection(up: Proportion(count: c.lostUp, samples: upTrace.count),
                                down: Proportion(count: c.lostDown, samples: downTrace.count),
                                roundTrip: Proportion(count: records.count - c.answered, samples: records.count))
        let lossPatterns = PerDirection(up: LossPattern(lostFlags: upTrace), down: LossPattern(lostFlags: downTrace),
                                        roundTrip: LossPattern(lostFlags: roundTrace))
        let gilbert = PerDirection(up: GilbertFit(lostFlags: upTrace), down: GilbertFit(lostFlags: downTrace),
                                   roundTrip: GilbertFit(lostFlags: roundTrace))
        let byArrival = delivered.sorted { $0.arrival < $1.arrival }
        let roundTripOrder = Reordering(arrivalOrder: byArrival.map(\.seq))
        let upReordering = Reordering(arrivalOrder: upOrder.sorted { $0.index < $1.index }.map(\.seq))
        let downReordering = Reordering(arrivalOrder: byArrival.compactMap(\.index))
        let reordering = PerDirection(up: upReordering, down: downReordering, roundTrip: roundTripOrder)
        c.reordered = roundTripOrder.reordered
        let duplicates = Duplicates(up: c.duplicatesUp, down: c.duplicatesDown,
                                    upRatio: Proportion(count: duplicatedUp, samples: seenUp),
                                    downRatio: Proportion(count: duplicatedDown, samples: answeredAny))
        let rtt = Percentiles(nanoseconds: rtts)
        let j = InterarrivalJitter.milliseconds(byArrival.map { ($0.sent, $0.arrival) })
        let jitter = Jitter(milliseconds: j, reason: j == nil ? "fewer than 2 responses" : nil)
        let ipdv = DelayVariation(delaysInSequence: delaysInSeq)
        let oneWay = clockOriginMicros == nil ? nil
            : OneWay(up: Percentiles(nanoseconds: oneWayUp), down: Percentiles(nanoseconds: oneWayDown))
        let timeline = LossTimeline(sentNanos: records.map(\.sentNanos), fates: fates)
        self.init(counts: c, loss: loss, lossPatterns: lossPatterns, gilbert: gilbert, reordering: reordering,
                  duplicates: duplicates, rtt: rtt, jitter: jitter, ipdv: ipdv, oneWay: oneWay, fates: fates, timeline: timeline)
    }
}
