public import Base

/// How `rank` measures each pair's capacity: the paced query rate it raises step by step, and what
/// counts as trouble.
public struct CapacitySettings: Sendable, Codable, Hashable {
    /// The first step's rate, queries per second.
    public var startRate: Double = 10
    /// Each step's rate is the previous one's times this until the first trouble.
    public var growth: Double = 1.5
    /// Never more than this many queries per second to one resolver.
    public var ceiling: Double = 200
    /// How long each step sends.
    public var stepSeconds: Double = 3
    /// Quiet time between steps, so a rate limiter's bucket refills and a queue drains.
    public var pauseSeconds: Double = 1
    /// Steps that halve the gap between the last clean rate and the first troubled one.
    public var refineSteps: Int = 3
    /// Tmax of every query (RFC 7680 2.8.2: a query not answered within it is lost).
    public var timeoutSeconds: Double = 1
    /// A step is troubled when more than this share of its queries failed (lost, or answered
    /// REFUSED, SERVFAIL or wrongly) and at least `minFailures` did.
    public var maxFailureRatio: Double = 0.02
    public var minFailures: Int = 2
    /// A step is troubled when its median RTT exceeds the first step's by more than the larger of
    /// the first step's median and this many milliseconds: delay grows before loss when a queue
    /// fills (congestion).
    public var delayMarginMs: Double = 20
    /// Time budget of one pair and of the whole run, seconds.
    public var pairBudgetSeconds: Double = 90
    public var totalBudgetSeconds: Double = 900
    /// Pairs measured at once.
    public var parallel: Int = 4

    public init() {}

    /// Failures that make a step of `planned` queries troubled however many of them are sent:
    /// at least `minFailures` and more than `maxFailureRatio` of the planned count.
    public func failuresToEnd(planned: Int) -> Int {
        max(minFailures, Int((maxFailureRatio * Double(planned)).rounded(.down)) + 1)
    }

    /// The first problem with these settings, naming the setting.
    public func problem() -> String? {
        if !(startRate > 0) || startRate > ceiling { return "the start rate must be above 0 and at most the ceiling" }
        if !(growth > 1.01 && growth <= 10) { return "the growth factor must be in (1.01, 10]" }
        if !(ceiling > 0 && ceiling <= 100_000) { return "the ceiling must be in (0, 100000] queries per second" }
        if !(stepSeconds >= 0.5 && stepSeconds <= 600) { return "the step must last 0.5 to 600 seconds" }
        if !(pauseSeconds >= 0 && pauseSeconds <= 600) { return "the pause must be 0 to 600 seconds" }
        if !(0...10).contains(refineSteps) { return "refine steps must be 0 to 10" }
        if !(timeoutSeconds > 0 && timeoutSeconds <= 60) { return "the timeout must be in (0, 60] seconds" }
        if !(maxFailureRatio >= 0 && maxFailureRatio < 1) { return "the failure ratio must be in [0, 1)" }
        if !(1...1000).contains(minFailures) { return "the failures needed must be 1 to 1000" }
        if !(delayMarginMs >= 0 && delayMarginMs <= 60_000) { return "the delay margin must be 0 to 60000 ms" }
        if !(pairBudgetSeconds > 0 && totalBudgetSeconds > 0) { return "budgets must be above 0" }
        if !(1...256).contains(parallel) { return "parallel pairs must be 1 to 256" }
        return nil
    }
}

/// One step: queries sent at one paced rate, and what came back.
public struct CapacityStep: Sendable, Codable, Hashable {
    /// The rate asked for, and the rate the queries actually left at (sent over the send span).
    public var targetRate: Double
    public var offeredRate: Double
    public var sent: Int
    /// Answered correctly (the responder's authenticated payload, whole).
    public var answered: Int
    /// Not answered within Tmax (RFC 7680 loss).
    public var lost: Int
    public var refused: Int
    public var servfail: Int
    /// Any other wrong answer (rewritten, cut, TC, another rcode).
    public var otherFailures: Int
    /// Answers per second over the step (`answered` over the send span plus Tmax at most).
    public var answeredRate: Double
    /// RTTs of the answered queries (RFC 2681 round-trip delay), milliseconds.
    public var rttMs: Percentiles?
    public var troubled: Bool
    /// Why the step counts as troubled, in words.
    public var trouble: String?

    public var failures: Int { sent - answered }
    /// RFC 7680 loss ratio over the step's queries, with its Wilson 95 % interval.
    public var loss: Proportion { Proportion(count: lost, samples: sent) }

    public init(targetRate: Double, offeredRate: Double, sent: Int, answered: Int, lost: Int, refused: Int,
                servfail: Int, otherFailures: Int, answeredRate: Double, rttMs: Percentiles? = nil, troubled: Bool,
                trouble: String? = nil) {
        self.targetRate = targetRate
        self.offeredRate = offeredRate
        self.sent = sent
        self.answered = answered
        self.lost = lost
        self.refused = refused
        self.servfail = servfail
        self.otherFailures = otherFailures
        self.answeredRate = answeredRate
        self.rttMs = rttMs
        self.troubled = troubled
        self.trouble = trouble
    }
}

/// What limits a pair's query rate.
public enum CapacityLimit: String, Sendable, Codable, Hashable {
    /// Above a rate, answers stop or come back REFUSED/SERVFAIL with no delay growth, and recover
    /// below it: a per-client rate limiter.
    case rateLimiter
    /// Delay grew first (a queue filling), then loss: congestion on the way.
    case congestion
    /// The pair failed at a rate it had passed just before and did not recover: it is unstable.
    case unstable
    /// Nothing limited it up to the ceiling the user allows.
    case ceiling
    /// The time budget ran out first: the sustainable rate is a lower bound.
    case budget
    /// Even the first step was troubled.
    case belowStart
}

/// The capacity of one pair: the knee, how it was found, and what it means for each engine.
public struct PairCapacity: Sendable, Codable, Hashable {
    public var resolver: String
    public var domain: String
    /// The query shape used: payload characters in the name and payload bytes in the TXT answer
    /// (the scan's upload and download MTU for the pair: a tunnel's full-size frames).
    public var queryCharacters: Int
    public var answerBytes: Int
    /// Every step in the order sent.
    public var steps: [CapacityStep]
    /// The highest rate whose step was clean (RFC 2544 26.1 throughput: the highest offered rate
    /// at which no more than the allowed share is lost), queries per second; 0 when none was.
    public var sustainableRate: Double
    /// The lowest rate found troubled; nil when none was.
    public var troubledRate: Double?
    public var limitedBy: CapacityLimit
    /// Why, in one line (REFUSED seen, delay grew from x to y ms, ...).
    public var evidence: String
    /// Loss and RTT percentiles of the step at `sustainableRate`.
    public var lossAtSustainable: Proportion?
    public var rttAtSustainableMs: Percentiles?
    /// After the first trouble, a step at the sustainable rate: clean again means the resolver
    /// recovers below its limit.
    public var recovered: Bool?
    public var seconds: Double
    /// How the queries reached the resolver (nil in reports written before issue 29: UDP).
    public var transport: DNSTransport?
    /// TCP, TLS and HTTPS only: the connections set up and failed during the measurement. Over a
    /// stream transport the kernel retransmits lost segments, so a query not answered within Tmax
    /// is a timeout (a stalled connection or a slow resolver), not a datagram lost on the path.
    public var connections: ConnectionCounts?
    /// TCP, TLS and HTTPS only: the RTT of one query sent before the first step, on connections not
    /// yet open: the connection set-up (TCP, TLS 1.3 handshake, HTTP/2 settings) plus one exchange.
    /// The steps' RTTs are on open connections.
    public var firstQueryMs: Double?

    public init(resolver: String, domain: String, queryCharacters: Int, answerBytes: Int, steps: [CapacityStep],
                sustainableRate: Double, troubledRate: Double?, limitedBy: CapacityLimit, evidence: String,
                lossAtSustainable: Proportion?, rttAtSustainableMs: Percentiles?,
                recovered: Bool?, seconds: Double) {
        self.resolver = resolver
        self.domain = domain
        self.queryCharacters = queryCharacters
        self.answerBytes = answerBytes
        self.steps = steps
        self.sustainableRate = sustainableRate
        self.troubledRate = troubledRate
        self.limitedBy = limitedBy
        self.evidence = evidence
        self.lossAtSustainable = lossAtSustainable
        self.rttAtSustainableMs = rttAtSustainableMs
        self.recovered = recovered
        self.seconds = seconds
    }
}

/// Query rates as the reports print them.
public enum QueryRate {
    /// A rate as the reports print it: whole above 100, one decimal below.
    /// Total: a figure beyond Int (an edited report's) prints as the Double it is, never a trap.
    public static func text(_ r: Double) -> String {
        guard r.isFinite, abs(r) < 9.0e14 else { return r.description }
        return r >= 100 ? String(Int(r.rounded())) : tenths(r)
    }

    public static func tenths(_ v: Double) -> String {
        guard v.isFinite, abs(v) < 9.0e14 else { return v.description }
        let t = Int((v * 10).rounded())
        return "\(t / 10).\(abs(t % 10))"
    }
}
