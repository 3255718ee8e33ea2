public import Base
public import Results
public import DNSWire
import NIOConcurrencyHelpers

/// Raises each pair's paced query rate step by step until loss or delay says the resolver is
/// limiting, then narrows the knee by bisection (as RFC 2544 26.1 searches a device's throughput).
public struct CapacityProbe: Sendable {
    public let prober: Prober
    public let settings: CapacitySettings
    /// Ends a step as soon as enough of its queries failed to make it troubled, instead of sending
    /// the rest into a resolver that is already limiting (`monitor`, which measures again and again;
    /// `rank` sends every step whole).
    public let endsTroubledSteps: Bool

    public init(prober: Prober, settings: CapacitySettings, endsTroubledSteps: Bool = false) {
        self.prober = prober
        self.settings = settings
        self.endsTroubledSteps = endsTroubledSteps
    }

    /// One paced step at `rate` queries per second: tunnel-shaped download probes (full-size names,
    /// full-size TXT answers), each judged by the prober.
    /// `count`: the queries to send (default: the step's seconds at `rate`); `type`: the answers'
    /// record type (`path` over a stream transport asks its own).
    func step(rate: Double, resolver: Endpoint, zone: DNSName, queryCharacters: Int, answerBytes: Int,
              baselineMedianMs: Double?, count planned: Int? = nil, type: DNSType = .txt) async -> CapacityStep {
        let count = planned ?? max(2, Int((rate * settings.stepSeconds).rounded()))
        let interval = 1e9 / rate
        let clock = ContinuousClock()
        let start = clock.now
        var outcomes: [ProbeOutcome] = []
        var lastSend = start
        let failed = NIOLockedValueBox(0)
        let enough = endsTroubledSteps ? settings.failuresToEnd(planned: count) : Int.max
        await withTaskGroup(of: ProbeOutcome.self) { group in
            for i in 0..<count {
                if Task.isCancelled || failed.withLockedValue({ $0 }) >= enough { break }
                let due = start + .nanoseconds(Int64(Double(i) * interval))
                if due > clock.now { try? await Task.sleep(until: due, clock: clock) }
                lastSend = clock.now
                group.addTask {
                    let outcome = await prober.download(resolver, zone: zone, bytes: answerBytes, type: type, queryCharacters: queryCharacters)
                    if !outcome.ok { failed.withLockedValue { $0 += 1 } }
                    return outcome
                }
            }
            for await outcome in group { outcomes.append(outcome) }
        }
        let sendSpan = max(1e-3, Double((lastSend - start).components.attoseconds) / 1e18 + Double((lastSend - start).components.seconds))
        let sent = outcomes.count
        let answered = outcomes.filter(\.ok).count
        let lost = outcomes.filter { $0.failure == .timeout || $0.failure == .sendFailed }.count
        let refused = outcomes.filter { $0.failure == .refused }.count
        let servfail = outcomes.filter { $0.failure == .servfail }.count
        let rtts = outcomes.compactMap { $0.ok ? $0.rttNanos.map { Double($0) / 1e6 } : nil }
        var step = CapacityStep(targetRate: rate, offeredRate: sent > 1 ? Double(sent - 1) / sendSpan : rate, sent: sent,
                                answered: answered, lost: lost, refused: refused, servfail: servfail,
                                otherFailures: sent - answered - lost - refused - servfail,
                                answeredRate: Double(answered) / (sendSpan + 1 / rate),
                                rttMs: Percentiles.nearestRank(rtts), troubled: false, trouble: nil)
        var reasons: [String] = []
        let failures = step.failures
        if failures >= settings.minFailures, Double(failures) > settings.maxFailureRatio * Double(max(1, sent)) {
            var parts: [String] = []
            if lost > 0 { parts.append("\(lost) lost") }
            if refused > 0 { parts.append("\(refused) REFUSED") }
            if servfail > 0 { parts.append("\(servfail) SERVFAIL") }
            if step.otherFailures > 0 { parts.append("\(step.otherFailures) wrong") }
            reasons.append("\(parts.joined(separator: ", ")) of \(sent)")
        }
        if let base = baselineMedianMs, let p50 = step.rttMs?.p50, p50 > base + max(base, settings.delayMarginMs) {
            reasons.append("median RTT \(QueryRate.tenths(p50)) ms against \(QueryRate.tenths(base)) ms at the first step")
        }
        step.troubled = !reasons.isEmpty
        step.trouble = reasons.isEmpty ? nil : reasons.joined(separator: "; ")
        return step
    }

    /// Measures one pair within `budgetSeconds`.
    public func measure(resolver: Endpoint, zone: DNSName, queryCharacters: Int, answerBytes: Int,
                        budgetSeconds: Double) async -> PairCapacity {
        let clock = ContinuousClock()
        let started = clock.now
        func elapsed() -> Double {
            let d = clock.now - started
            return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
        }
        let stepCost = settings.stepSeconds + settings.timeoutSeconds + settings.pauseSeconds
        func affordable() -> Bool { elapsed() + stepCost <= budgetSeconds && !Task.isCancelled }
        var steps: [CapacityStep] = []
        var baseline: Double?
        var clean: CapacityStep?
        var troubled: CapacityStep?
        var outOfBudget = false
        func run(_ rate: Double) async -> CapacityStep {
            if !steps.isEmpty, settings.pauseSeconds > 0 { try? await Task.sleep(for: .seconds(settings.pauseSeconds)) }
            let s = await step(rate: rate, resolver: resolver, zone: zone, queryCharacters: queryCharacters,
                               answerBytes: answerBytes, baselineMedianMs: baseline)
            steps.append(s)
            if baseline == nil, !s.troubled { baseline = s.rttMs?.p50 }
            return s
        }
        // Raise the rate until the first trouble or the ceiling.
        var rate = settings.startRate
        while true {
            guard affordable() else { outOfBudget = true; break }
            let s = await run(rate)
            if s.troubled { troubled = s; break }
            clean = s
            if rate >= settings.ceiling { break }
            rate = min(settings.ceiling, rate * settings.growth)
        }
        // Narrow the knee between the last clean rate and the first troubled one.
        if let bad = troubled, let good = clean {
            var low = good.targetRate
            var high = bad.targetRate
            var refined = 0
            while refined < settings.refineSteps, high / low > 1.02 {
                guard affordable() else { outOfBudget = true; break }
                refined += 1
                let mid = (low + high) / 2
                let s = await run(mid)
                if s.troubled { high = mid; troubled = s } else { low = mid; clean = s }
            }
        }
        // Below the knee again: a rate limiter lets the client back in; an unstable pair does not.
        var recovered: Bool?
        if troubled != nil, let good = clean, affordable() {
            recovered = !(await run(good.targetRate)).troubled
        }

        let limit: CapacityLimit
        let evidence: String
        if let bad = troubled {
            let delayGrew = steps.contains { $0.trouble?.contains("median RTT") ?? false }
            if clean == nil {
                limit = .belowStart
                evidence = "troubled at the first step (\(bad.trouble ?? ""))"
            } else if recovered == false {
                limit = .unstable
                evidence = "troubled at \(Self.rate(bad.targetRate)) q/s (\(bad.trouble ?? "")) and still troubled back at \(Self.rate(clean?.targetRate ?? 0)) q/s"
            } else if delayGrew {
                limit = .congestion
                evidence = "delay grew before loss: \(bad.trouble ?? "")"
            } else {
                limit = .rateLimiter
                let answers = bad.refused + bad.servfail > 0 ? "answers turned into REFUSED/SERVFAIL" : "answers stopped without delay growth"
                evidence = "\(answers) above \(Self.rate(clean?.targetRate ?? 0)) q/s (\(bad.trouble ?? "") at \(Self.rate(bad.targetRate)) q/s)"
                    + (recovered == true ? "; clean again below" : "")
            }
        } else if outOfBudget {
            limit = .budget
            evidence = "the time budget ran out at \(Self.rate(clean?.targetRate ?? 0)) q/s without trouble"
        } else {
            limit = .ceiling
            evidence = "clean up to the ceiling, \(Self.rate(settings.ceiling)) q/s"
        }
        return PairCapacity(resolver: resolver.description, domain: zone.description, queryCharacters: queryCharacters,
                            answerBytes: answerBytes, steps: steps, sustainableRate: clean?.targetRate ?? 0,
                            troubledRate: troubled?.targetRate, limitedBy: limit, evidence: evidence,
                            lossAtSustainable: clean?.loss, rttAtSustainableMs: clean?.rttMs, recovered: recovered,
                            seconds: elapsed())
    }

    /// A rate as the reports print it (`QueryRate.text`, Results).
    public static func rate(_ r: Double) -> String { QueryRate.text(r) }
}
