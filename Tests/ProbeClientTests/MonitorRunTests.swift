import Base
import DNSWire
import Foundation
@testable import ProbeClient
import Synchronization
import Testing
@testable import Results

/// `monitor`'s loop (`MonitorRun`) with checks and rate measurements the test gives: what it
/// counts, when it stops, what it writes to history.jsonl.
@Suite struct MonitorRunTests {
    static func targets(_ n: Int) throws -> [MonitorTarget] {
        try (0..<n).map { i in
            MonitorTarget(resolver: try Endpoint(parsing: "192.0.2.\(i + 1)", defaultPort: 53), zone: try DNSName("vpn.lab.test"),
                          queryCharacters: 180, answerBytes: 900, spare: false)
        }
    }

    static func settings(checks: Int? = nil, duration: Double? = nil, interval: Double = 0.001) -> MonitorRun.Settings {
        .init(interval: interval, duration: duration, checks: checks, attempts: 1, parallel: 2, rateInterval: nil, rateParallel: 1)
    }

    /// Runs `monitor` with its history in a temporary file; returns the state and the history's lines.
    static func run(_ monitor: MonitorRun, check: @escaping MonitorRun.Check,
                    measure: MonitorRun.Measure? = nil) async throws -> (MonitorRun.State, [String]) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("tp-monitor-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(FileManager.default.createFile(atPath: path, contents: nil))
        let handle = try #require(FileHandle(forWritingAtPath: path))
        let state = await monitor.run(historyFD: handle.fileDescriptor, check: check, measure: measure)
        try handle.close()
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
        return (state, lines)
    }

    /// Pair 1 stops answering at its third check and is diagnosed down; the loop stops at --checks,
    /// each check a line of history, rounds counted, the others still up.
    @Test func checksUntilTheLimitAndFollowsAPairGoingDown() async throws {
        let targets = try Self.targets(3)
        let calls = Mutex<[Int]>([0, 0, 0])
        let check: MonitorRun.Check = { i in
            let n = calls.withLock { c in c[i] += 1; return c[i] }
            if i == 1, n >= 3 { return (ProbeOutcome(failure: .timeout), nil) }  // diagnosed down: no size passes
            return (ProbeOutcome(rttNanos: 2_000_000), nil)
        }
        let monitor = MonitorRun(targets: targets, settings: Self.settings(checks: 12), engineScans: [], directory: "/nonexistent")
        let (state, lines) = try await Self.run(monitor, check: check)
        #expect(state.checks == 12 && state.rounds == 4, "\(state.checks) checks in \(state.rounds) rounds")
        #expect(state.pairs.map(\.up) == [true, false, true])
        #expect(lines.count == 12)
        #expect(lines.filter { $0.contains("\"resolver\":\"192.0.2.2:53\"") && $0.contains("\"down\":true") }.count == 2, "\(lines)")
        #expect(lines.filter { $0.contains("\"ok\":true") }.count == 10)
        #expect(!state.memory.isEmpty && state.historyFailure == nil)
    }

    /// Each up pair's rate is measured once without --rate-interval, one at a time (--rate-parallel
    /// 1), and a pair is not checked while its rate is measured.
    @Test func ratesAreMeasuredBesideTheChecksAndNotCheckedMeanwhile() async throws {
        let targets = try Self.targets(2)
        let measuring = Mutex<Set<Int>>([])
        let checkedWhileMeasured = Atomic<Int>(0)
        let check: MonitorRun.Check = { i in
            if measuring.withLock({ $0.contains(i) }) { checkedWhileMeasured.add(1, ordering: .relaxed) }
            return (ProbeOutcome(rttNanos: 1_000_000), nil)
        }
        let measure: MonitorRun.Measure = { i in
            measuring.withLock { _ = $0.insert(i) }
            try? await Task.sleep(for: .milliseconds(20))
            measuring.withLock { _ = $0.remove(i) }
            return MonitorRateTests.capacity(rate: Double(100 * (i + 1)))
        }
        // Counted in checks, not seconds (a busy machine stretches every sleep): 100 rounds of 5 ms.
        let monitor = MonitorRun(targets: targets, settings: Self.settings(checks: 200, interval: 0.005), engineScans: [],
                                 directory: "/nonexistent")
        let (state, lines) = try await Self.run(monitor, check: check, measure: measure)
        #expect(state.pairs.map { $0.rates?.measurements } == [1, 1], "\(state.pairs.map(\.rates))")
        #expect(state.pairs[1].rates?.last.sustainableRate == 200)
        #expect(checkedWhileMeasured.load(ordering: .relaxed) == 0)
        #expect(lines.filter { $0.contains("\"rate\":") }.count == 2, "\(lines.filter { !$0.contains("\"ok\"") })")
        #expect(state.checks == 200 && state.elapsed > 0)
    }

    /// A cancelled loop (a signal) returns what it saw.
    @Test func cancellationEndsTheLoopWithWhatItSaw() async throws {
        let targets = try Self.targets(1)
        let monitor = MonitorRun(targets: targets, settings: Self.settings(), engineScans: [], directory: "/nonexistent")
        let task = Task { try await Self.run(monitor, check: { _ in (ProbeOutcome(rttNanos: 1_000_000), nil) }) }
        try await Task.sleep(for: .milliseconds(100))
        task.cancel()
        let (state, lines) = try await task.value
        #expect(state.checks > 0 && lines.count == state.checks)
        #expect(state.pairs[0].up)
    }
}
