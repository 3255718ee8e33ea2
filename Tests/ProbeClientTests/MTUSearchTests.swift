@testable import ProbeClient
import Testing
import Results

@Suite struct MTUSearchTests {
    func outcome(_ f: ProbeFailure?) -> ProbeOutcome {
        var o = ProbeOutcome()
        o.failure = f
        return o
    }

    @Test func highestSizeFirstAcceptsAtOnce() async {
        let counter = Counter()
        let r = await MTUSearch(low: 20, high: 4096, attempts: 2).run { _ in counter.bump(); return outcome(nil) }
        #expect(r.best == 4096 && r.probes == 1 && counter.value == 1)
    }

    @Test func findsASizeLimitExactlyWithoutRetryingDeterministicFailures() async {
        let r = await MTUSearch(low: 20, high: 4096, attempts: 3).run { size in outcome(size <= 1187 ? nil : .tc) }
        #expect(r.best == 1187 && r.limitedBy == .tc)
        // Deterministic TC failures are not retried: one probe per size tried.
        #expect(r.steps.allSatisfy { $0.outcomes.count == 1 })
    }

    /// A right guess ends the search with two probes after `low`; a wrong one costs its probes but
    /// the search still lands on the exact limit.
    @Test func guessesNarrowTheSearchAndNeverChangeItsResult() async {
        for limit in [1187, 934, 450, 21, 4095] {
            let plain = await MTUSearch(low: 20, high: 4096, attempts: 1).run { size in outcome(size <= limit ? nil : .tc) }
            let right = await MTUSearch(low: 20, high: 4096, attempts: 1).run(guesses: { _ in [limit] }) { size in
                outcome(size <= limit ? nil : .tc)
            }
            let wrong = await MTUSearch(low: 20, high: 4096, attempts: 1).run(guesses: { _ in [1500, 700, 4000, 30] }) { size in
                outcome(size <= limit ? nil : .tc)
            }
            #expect(plain.best == limit && right.best == limit && wrong.best == limit, "limit \(limit)")
            #expect(right.limitedBy == .tc && wrong.limitedBy == .tc)
            if limit < 4095 { #expect(right.probes == 4, "limit \(limit): \(right.steps.map(\.size))") }
            #expect(wrong.probes <= plain.probes + 4)
        }
    }

    @Test func retriesTransientLossAtTheSameSize() async {
        var losses = [ProbeFailure?](repeating: .timeout, count: 1) + [nil]
        let counter = Counter()
        let r = await MTUSearch(low: 20, high: 100, attempts: 2).run { _ in
            counter.bump()
            return outcome(losses.isEmpty ? nil : losses.removeFirst())
        }
        #expect(r.best == 100 && counter.value == 2)
    }

    @Test func givesUpWhenEvenTheLowestSizeFails() async {
        let r = await MTUSearch(low: 20, high: 100, attempts: 2).run { _ in outcome(.timeout) }
        #expect(r.best == nil && r.dominantFailure == .timeout && r.probes == 4)
    }
}

final class Counter: @unchecked Sendable {
    var value = 0
    func bump() { value += 1 }
}

@Suite struct MTUSearchRecheckTests {
    func outcome(_ f: ProbeFailure?, congested: Bool = false) -> ProbeOutcome {
        var o = ProbeOutcome()
        o.failure = f
        o.congested = congested
        return o
    }

    /// A burst lost the first probes of the highest size: once a smaller size passes, the timed-out
    /// size is asked again next to it, passes, and the search lands on the true limit (no limit here).
    @Test func aSizeLostToABurstIsAskedAgain() async {
        let counter = Counter()
        let r = await MTUSearch(low: 20, high: 237, attempts: 2).run { size in
            counter.bump()
            // The first three probes meet a burst.
            return outcome(counter.value <= 3 ? .timeout : nil)
        }
        #expect(r.best == 237 && r.limitedBy == nil, "\(r.steps.map { ($0.size, $0.passed) })")
    }

    /// A size that keeps timing out while the smaller one passes next to it is a limit.
    @Test func aSizeThatTimesOutNextToAPassingOneIsALimit() async {
        let r = await MTUSearch(low: 20, high: 237, attempts: 2).run { size in outcome(size <= 150 ? nil : .timeout) }
        #expect(r.best == 150 && r.limitedBy == .timeout)
        // One re-check round: the best again, then the size above it once.
        let rechecks = r.steps.suffix(2).map(\.size)
        #expect(rechecks == [150, 151], "\(r.steps.map(\.size))")
    }

    /// A timeout lost while the scan was congested is not an attempt.
    @Test func congestedTimeoutsAreRetried() async {
        let counter = Counter()
        let r = await MTUSearch(low: 20, high: 100, attempts: 1).run { _ in
            counter.bump()
            return counter.value <= 2 ? outcome(.timeout, congested: true) : outcome(nil)
        }
        #expect(r.best == 100 && counter.value == 3)
    }
}

@Suite struct MTUSearchLowestSizeTests {
    /// Even the lowest size was lost in a burst: asked again next to a passing control, it passes.
    @Test func theLowestSizeLostToABurstIsAskedAgainNextToTheControl() async {
        let counter = Counter()
        let r = await MTUSearch(low: 20, high: 4096, attempts: 2).run(control: { ProbeOutcome() }) { size in
            counter.bump()
            var o = ProbeOutcome()
            // The highest size is a limit (TC); the first tries of the lowest meet a burst.
            if size == 4096 { o.failure = .tc } else if counter.value <= 3 || size > 1000 { o.failure = .timeout }
            return o
        }
        #expect(r.best == 1000, "\(r.steps.map { ($0.size, $0.passed) })")
    }

    /// A lowest size that fails next to a passing control fails; without a control nothing is re-asked.
    @Test func aLowestSizeThatFailsNextToTheControlFails() async {
        let controls = Counter()
        let r = await MTUSearch(low: 20, high: 100, attempts: 2).run(control: { controls.bump(); return ProbeOutcome() }) { _ in
            var o = ProbeOutcome()
            o.failure = .timeout
            return o
        }
        #expect(r.best == nil && controls.value == 1)
    }
}

/// Issue 27, item 2, after the upload stage: a size probe's timeout is no congestion signal, so the
/// scan's own overload loses sizes without shrinking the window; a timeout rejects a pair or bounds
/// its MTU only when a retry sent once the scan is quiet is lost too (`CongestionWindow.timeoutRule`).
@Suite struct MTUSearchQuietRetryTests {
    /// What the probe saw: the sizes asked and which of them went quietly.
    final class Sent: @unchecked Sendable {
        var sizes: [Int] = []
        var quiet: [Int] = []
        var plain: Int { sizes.count - quiet.count }
        func record(_ size: Int) -> Bool {
            sizes.append(size)
            if CongestionWindow.quiet { quiet.append(size) }
            return CongestionWindow.quiet
        }
    }

    static func outcome(_ f: ProbeFailure?) -> ProbeOutcome {
        var o = ProbeOutcome()
        o.failure = f
        return o
    }

    /// The download stage of the 12 pairs rejected at --concurrency 1000 under CPU load: the
    /// highest size is a limit (TC) and the scan's overload loses the lowest size's two attempts
    /// and its re-check next to a passing echo. Asked when the scan is quiet it passes, and the
    /// search lands on the limit; before, the pair was rejected ("download: timeout").
    @Test func aLowestSizeLostInTheScansOverloadIsAskedQuietly() async {
        let sent = Sent()
        let r = await MTUSearch(low: 20, high: 4096, attempts: 2, quietRetries: 3).run(control: { ProbeOutcome() }) { size in
            let quiet = sent.record(size)
            if size > 1000 { return Self.outcome(.tc) }
            return Self.outcome(size == 20 && !quiet ? .timeout : nil)
        }
        #expect(r.best == 1000 && r.limitedBy == .tc, "\(r.steps.map { ($0.size, $0.passed) })")
        #expect(sent.quiet == [20])
    }

    /// A lowest size lost alone when the scan was quiet fails: the quiet retry is evidence. Without
    /// quiet retries (a scan without a congestion window) nothing more is asked.
    @Test func aLowestSizeLostQuietlyFails() async {
        for quietRetries in [3, 0] {
            let sent = Sent()
            let r = await MTUSearch(low: 20, high: 100, attempts: 2, quietRetries: quietRetries).run(control: { ProbeOutcome() }) { size in
                _ = sent.record(size)
                return Self.outcome(.timeout)
            }
            #expect(r.best == nil && r.dominantFailure == .timeout)
            #expect(sent.quiet == (quietRetries > 0 ? [20] : []), "\(sent.quiet)")
        }
    }

    /// A quiet retry that met the scan's congestion (or lost with others) is no evidence either:
    /// it is asked again, up to three quiet retries in all.
    @Test func aQuietRetryMetByCongestionIsAskedAgain() async {
        let sent = Sent()
        let r = await MTUSearch(low: 20, high: 100, attempts: 1, quietRetries: 3).run { size in
            let quiet = sent.record(size)
            if size == 100 { return Self.outcome(.tc) }
            // The lowest size: lost, and its first two quiet retries lost with other expected answers.
            var o = Self.outcome(size == 20 && (!quiet || sent.quiet.count < 3) ? .timeout : nil)
            o.lostWithOthers = quiet && o.failure != nil
            return o
        }
        #expect(r.best == 99 && r.limitedBy == .tc && sent.quiet == [20, 20, 20], "\(sent.quiet)")
    }

    /// A burst loses every probe from the 4th to the 12th: the re-checks next to the best (three
    /// rounds) climb back to 181, and the size above it, lost twice in the burst, bounded the MTU
    /// there. Asked when the scan is quiet it passes, and the search goes on to the true limit.
    @Test func aSizeAboveTheBestLostInABurstIsNoLimit() async {
        let sent = Sent()
        let r = await MTUSearch(low: 20, high: 237, attempts: 2, quietRetries: 3).run { size in
            let quiet = sent.record(size)
            if !quiet, (4...12).contains(sent.plain) { return Self.outcome(.timeout) }
            return Self.outcome(size <= 200 ? nil : .tc)
        }
        #expect(r.best == 200 && r.limitedBy == .tc, "\(r.steps.map { ($0.size, $0.passed) })")
        #expect(sent.quiet.first == 182, "\(sent.quiet)")
    }

    /// A size above the best lost alone when the scan is quiet is the limit.
    @Test func aSizeAboveTheBestLostQuietlyIsALimit() async {
        let sent = Sent()
        let r = await MTUSearch(low: 20, high: 237, attempts: 2, quietRetries: 3).run { size in
            _ = sent.record(size)
            return Self.outcome(size <= 150 ? nil : .timeout)
        }
        #expect(r.best == 150 && r.limitedBy == .timeout)
        #expect(sent.quiet == [151], "\(sent.quiet)")
    }
}
