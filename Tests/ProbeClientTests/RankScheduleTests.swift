import Synchronization
import Testing
@testable import ProbeClient

/// `rank`'s scheduler (`RankRun.schedule`), with a fake measurement and a fake clock: the pairs go in
/// the seeded order, never more than `parallel` at once, each within its own and the run's budget.
struct RankScheduleTests {
    /// What the fake measurements saw: the order they started in, the budgets given, the most at once.
    final class Log: Sendable {
        struct State {
            var started: [Int] = []
            var budgets: [Double] = []
            var running = 0
            var most = 0
        }
        let state = Mutex(State())
    }

    @Test func everyPairInOrderNeverMoreThanParallelAtOnce() async {
        let log = Log()
        let order = RankRun.order(count: 12, seed: 5)
        let results = await RankRun.schedule(order: order, parallel: 3, pairBudgetSeconds: 90, totalBudgetSeconds: 900,
                                             elapsedSeconds: { 0 }) { index, budget in
            log.state.withLock {
                $0.started.append(index)
                $0.budgets.append(budget)
                $0.running += 1
                $0.most = max($0.most, $0.running)
            }
            try? await Task.sleep(for: .milliseconds(5))
            log.state.withLock { $0.running -= 1 }
            return index % 4 == 0 ? nil : index * 10
        }
        let state = log.state.withLock { $0 }
        #expect(state.started.count == 12 && Set(state.started) == Set(0..<12))
        #expect(state.most <= 3 && state.most >= 1)
        #expect(state.budgets.allSatisfy { $0 == 90 })
        // A pair whose measurement gave nothing has no entry.
        #expect(results == Dictionary(uniqueKeysWithValues: (0..<12).filter { $0 % 4 != 0 }.map { ($0, $0 * 10) }))
    }

    @Test func theOrderIsASeededPermutation() {
        #expect(RankRun.order(count: 50, seed: 5) == RankRun.order(count: 50, seed: 5))
        #expect(RankRun.order(count: 50, seed: 5) != RankRun.order(count: 50, seed: 6))
        #expect(RankRun.order(count: 50, seed: 5).sorted() == Array(0..<50))
        #expect(RankRun.order(count: 0, seed: 5).isEmpty)
    }

    /// Each pair gets the smaller of its own budget and what is left of the run's; once the run's is
    /// spent, no pair starts.
    @Test func theRunsBudgetBoundsEachPairAndStopsTheRest() async {
        let log = Log()
        let clock = Mutex(0.0)
        let results = await RankRun.schedule(order: Array(0..<10), parallel: 1, pairBudgetSeconds: 40, totalBudgetSeconds: 100,
                                             elapsedSeconds: { clock.withLock { $0 } }) { index, budget in
            log.state.withLock {
                $0.started.append(index)
                $0.budgets.append(budget)
            }
            clock.withLock { $0 += 35 }  // each pair takes 35 s of the run's budget
            return index
        }
        let state = log.state.withLock { $0 }
        // Starts at 0, 35, 70 s (left 100, 65, 30); at 105 s the budget is spent.
        #expect(state.started == [0, 1, 2] && state.budgets == [40, 40, 30])
        #expect(results.keys.sorted() == [0, 1, 2])
    }
}
