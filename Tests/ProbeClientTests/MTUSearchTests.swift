import ProbeClient
import Testing

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
