public import Base
import Foundation

/// What a failed check found when smaller queries still passed: the pair is up but no longer carries
/// the sizes the scan measured (its MTU drifted). Each figure is the largest size that passed in a
/// short bisection (the other direction held small), so a lower bound on today's limit; nil when the
/// scan's own size passed in that direction.
public struct SizeDrift: Codable, Sendable, Hashable {
    /// Seconds since the monitor started.
    public var at: Double
    /// Query name characters (upload), when they shrank below the scan's.
    public var queryCharacters: Int?
    /// TXT answer bytes (download), when they shrank below the scan's.
    public var answerBytes: Int?

    public init(at: Double, queryCharacters: Int?, answerBytes: Int?) {
        self.at = at
        self.queryCharacters = queryCharacters
        self.answerBytes = answerBytes
    }
}

/// What `monitor` keeps of one pair: counts and a bounded list of outages, so memory stays flat
/// however long it runs (every check is in the history file on disk, not here).
public struct PairStability: Codable, Sendable, Hashable {
    public struct Outage: Codable, Sendable, Hashable {
        /// Seconds since the monitor started: the first failed check, and the first passing one after it.
        public var downAt: Double
        public var upAt: Double?
        public var failure: String?
    }

    public var resolver: String
    public var domain: String
    public var spare: Bool
    public var checks = 0
    public var passed = 0
    /// Whether the last check passed.
    public var up = false
    /// Seconds since the start of the last failed check; nil when none failed.
    public var lastFailureAt: Double?
    /// Changes between up and down after the first check.
    public var transitions = 0
    /// The latest `maxOutages` outages, oldest first; `outagesDropped` counts older ones left out.
    public var outages: [Outage] = []
    public var outagesDropped = 0
    /// Failed checks in which smaller queries still passed: the pair was up, its sizes were not.
    public var sizeFailures = 0
    /// The latest such finding, and the smallest sizes any of them found (nil: never shrank).
    public var lastDrift: SizeDrift?
    public var leastQueryCharacters: Int?
    public var leastAnswerBytes: Int?
    /// Median RTT of the passing checks, from a bounded reservoir of the latest ones (RFC 2681).
    public var rttP50Ms: Double?
    /// The latest `rttWindow` RTTs in arrival order (a ring: `recentRttNext` is where the next one
    /// goes) and the same values sorted, both allocated whole at the first one: the median is read
    /// without sorting a copy, so a check allocates nothing here however long the monitor runs.
    private var recentRtts: [Double] = []
    private var sortedRtts: [Double] = []
    private var recentRttNext = 0

    /// Its sustainable-rate measurements (`monitor --rate-interval`); nil until the first one.
    public var rates: RateSummary?

    public static let maxOutages = 100
    static let rttWindow = 64

    public init(resolver: String, domain: String, spare: Bool) {
        self.resolver = resolver
        self.domain = domain
        self.spare = spare
    }

    /// Share of checks passed, with its Wilson 95 % interval.
    public var passRatio: Double { checks > 0 ? Double(passed) / Double(checks) : 0 }
    public var passInterval: WilsonInterval? { WilsonInterval(successes: passed, trials: checks) }

    /// Takes one check at `at` seconds since the start; returns true when the pair went up or down.
    /// `drift`: what a failed check's diagnosis found (the smaller sizes that still passed).
    @discardableResult
    public mutating func record(ok: Bool, at: Double, rttMs: Double?, failure: String?, drift: SizeDrift? = nil) -> Bool {
        if !ok, let drift {
            sizeFailures += 1
            lastDrift = drift
            if let q = drift.queryCharacters { leastQueryCharacters = Swift.min(leastQueryCharacters ?? q, q) }
            if let a = drift.answerBytes { leastAnswerBytes = Swift.min(leastAnswerBytes ?? a, a) }
        }
        let first = checks == 0
        checks += 1
        let changed = !first && ok != up
        if changed { transitions += 1 }
        if ok {
            passed += 1
            if let rttMs {
                if recentRtts.isEmpty {
                    recentRtts.reserveCapacity(Self.rttWindow)
                    sortedRtts.reserveCapacity(Self.rttWindow)
                }
                if recentRtts.count < Self.rttWindow {
                    recentRtts.append(rttMs)
                } else {
                    sortedRtts.remove(at: Self.position(of: recentRtts[recentRttNext], in: sortedRtts))
                    recentRtts[recentRttNext] = rttMs
                }
                sortedRtts.insert(rttMs, at: Self.position(of: rttMs, in: sortedRtts))
                recentRttNext = (recentRttNext + 1) % Self.rttWindow
                rttP50Ms = sortedRtts[(sortedRtts.count - 1) / 2]
            }
            if !up, let last = outages.indices.last, outages[last].upAt == nil { outages[last].upAt = at }
        } else {
            lastFailureAt = at
            if up || first {
                outages.append(Outage(downAt: at, upAt: nil, failure: failure))
                if outages.count > Self.maxOutages {
                    outages.removeFirst()
                    outagesDropped += 1
                }
            }
        }
        up = ok
        return changed
    }

    /// The first index of `sorted` whose value is not below `value` (binary search).
    static func position(of value: Double, in sorted: [Double]) -> Int {
        var (low, high) = (0, sorted.count)
        while low < high {
            let mid = (low + high) / 2
            if sorted[mid] < value { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// Takes one sustainable-rate measurement.
    public mutating func record(rate sample: RateSample) {
        if rates == nil { rates = RateSummary(first: sample) } else { rates?.record(sample) }
    }

    enum CodingKeys: String, CodingKey {
        case resolver, domain, spare, checks, passed, up, lastFailureAt, transitions, outages, outagesDropped, rttP50Ms
        case sizeFailures, lastDrift, leastQueryCharacters, leastAnswerBytes
        case rates
    }
}

/// A pair's sustainable-rate measurements: how many, the first and the latest, and those that found
/// the lowest and the highest rate (the earliest of equals). Only these four are held however long
/// the monitor runs; every measurement is a line of the history file.
public struct RateSummary: Codable, Sendable, Hashable {
    public var measurements: Int
    public var first: RateSample
    public var last: RateSample
    public var lowest: RateSample
    public var highest: RateSample

    public init(first: RateSample) {
        measurements = 1
        self.first = first
        last = first
        lowest = first
        highest = first
    }

    public mutating func record(_ sample: RateSample) {
        measurements += 1
        last = sample
        if sample.sustainableRate < lowest.sustainableRate { lowest = sample }
        if sample.sustainableRate > highest.sustainableRate { highest = sample }
    }
}

/// One measurement of a pair's sustainable query rate while `monitor` runs: `CapacityProbe`'s knee
/// search (the rate raised step by step to the first trouble, narrowed by bisection, RFC 2544 26.1),
/// with the loss (RFC 7680) and RTT (RFC 2681) of the step at the sustainable rate.
public struct RateSample: Codable, Sendable, Hashable {
    /// Seconds since the monitor started when the measurement began, and how long it took.
    public var at: Double
    public var seconds: Double
    /// The highest rate whose step was clean, queries per second (0: not even the first step).
    public var sustainableRate: Double
    /// The lowest rate found troubled; nil when none was (the ceiling or the budget came first).
    public var troubledRate: Double?
    public var limitedBy: CapacityLimit
    /// Loss of the step at the sustainable rate, with its Wilson 95 % interval.
    public var loss: Proportion?
    /// RTT percentiles of the answered queries of that step, milliseconds.
    public var rttMs: Percentiles?
    /// Steps sent, and why the search ended where it did.
    public var steps: Int
    public var evidence: String

    public init(at: Double, capacity c: PairCapacity) {
        self.at = at
        seconds = c.seconds
        sustainableRate = c.sustainableRate
        troubledRate = c.troubledRate
        limitedBy = c.limitedBy
        loss = c.lossAtSustainable
        rttMs = c.rttAtSustainableMs
        steps = c.steps.count
        evidence = c.evidence
    }

    /// Queries answered per second at the sustainable rate: rate x (1 - loss), as `rank` counts goodput.
    public var answeredRate: Double { sustainableRate * (1 - (loss?.ratio ?? 0)) }
}
