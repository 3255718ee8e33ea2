public import Base
public import DNSWire
import ProbeProtocol

/// One pair `monitor` re-checks: the tunnel-shaped probe it sends (a name of the pair's upload MTU
/// asking for a TXT answer of its download MTU, so one query checks both directions' sizes).
public struct MonitorTarget: Sendable, Hashable {
    public var resolver: Endpoint
    public var zone: DNSName
    public var queryCharacters: Int
    public var answerBytes: Int
    /// A pair the scan did not accept, watched in case it comes back.
    public var spare: Bool
    /// The resolver with its transport: checks go over TCP, TLS or HTTPS when the scan's did
    /// (`Prober.targets` must name it), else over UDP.
    public var target: ResolverTarget

    public init(resolver: Endpoint, zone: DNSName, queryCharacters: Int, answerBytes: Int, spare: Bool,
                target: ResolverTarget? = nil) {
        self.resolver = resolver
        self.zone = zone
        self.queryCharacters = queryCharacters
        self.answerBytes = answerBytes
        self.spare = spare
        self.target = target ?? ResolverTarget(endpoint: resolver)
    }

    /// The target of a scan's pair: its resolver over its own transport, a probe of its upload and
    /// download MTU (or the smallest sizes when the scan found none); nil when the pair's resolver or
    /// domain is not one.
    public init?(pair p: ScanPair, spare: Bool, fallbackAnswerBytes: Int) {
        guard let target = p.resolverTarget, let zone = try? DNSName(p.domain) else { return nil }
        self.init(resolver: target.endpoint, zone: zone, queryCharacters: p.upload?.payloadChars ?? ProbeMeta.characterCount,
                  answerBytes: p.download?.bytes ?? fallbackAnswerBytes, spare: spare, target: target)
    }

    /// The name reports and the engines' resolver files use: the form that names the transport.
    public var name: String { target.description }

    /// One check: passes when one of `attempts` tries comes back whole (a single lost query is loss,
    /// not an outage). Returns the last outcome.
    public func check(with prober: Prober, attempts: Int) async -> ProbeOutcome {
        var last = ProbeOutcome()
        for _ in 0..<max(1, attempts) {
            last = await prober.download(resolver, zone: zone, bytes: answerBytes, type: .txt, queryCharacters: queryCharacters)
            if last.ok || Task.isCancelled { break }
        }
        return last
    }
}

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

extension MonitorTarget {
    /// The smallest check: the shortest probe name asking for a short TXT answer.
    var smallest: (queryCharacters: Int, answerBytes: Int) { (ProbeMeta.characterCount, Swift.min(answerBytes, 64)) }

    /// After a failed check: nil when even the smallest query fails (the pair is down); otherwise
    /// the sizes that pass now, each direction bisected in `steps` steps with the other held small.
    public func diagnose(with prober: Prober, attempts: Int, steps: Int = 4) async -> (queryCharacters: Int?, answerBytes: Int?)? {
        func passes(_ q: Int, _ a: Int) async -> Bool {
            for _ in 0..<Swift.max(1, attempts) {
                if await prober.download(resolver, zone: zone, bytes: a, type: .txt, queryCharacters: q).ok { return true }
                if Task.isCancelled { return false }
            }
            return false
        }
        let small = smallest
        guard await passes(small.queryCharacters, small.answerBytes) else { return nil }
        /// The largest size in (low, high] that passes, given that `low` passes and `high` did not.
        func bisect(low: Int, high: Int, _ probe: (Int) async -> Bool) async -> Int {
            var (lo, hi) = (low, high)
            for _ in 0..<steps where hi - lo > 1 {
                let mid = (lo + hi) / 2
                if await probe(mid) { lo = mid } else { hi = mid }
            }
            return lo
        }
        var query: Int?
        if queryCharacters > small.queryCharacters, !(await passes(queryCharacters, small.answerBytes)) {
            query = await bisect(low: small.queryCharacters, high: queryCharacters) { await passes($0, small.answerBytes) }
        }
        var answer: Int?
        if answerBytes > small.answerBytes, !(await passes(small.queryCharacters, answerBytes)) {
            answer = await bisect(low: small.answerBytes, high: answerBytes) { await passes(small.queryCharacters, $0) }
        }
        return (query, answer)
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
    public var loss: CapacityStep.Proportion?
    /// RTT percentiles of the answered queries of that step, milliseconds.
    public var rttMs: CapacityStep.Percentiles?
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

/// When `monitor` measures each pair's sustainable rate again: a pair is due when it is up, is not
/// being measured, and was never measured or its last measurement began `interval` seconds ago or
/// more; at most `parallel` are measured at once, those due longest first.
public struct RateSchedule: Sendable {
    public let interval: Double
    public let parallel: Int
    private var lastStart: [Double?]
    public private(set) var measuring: Set<Int> = []

    public init(pairs: Int, interval: Double, parallel: Int) {
        self.interval = interval
        self.parallel = max(1, parallel)
        lastStart = Array(repeating: nil, count: pairs)
    }

    /// The pairs to start measuring at `now` (seconds since the start), marked as being measured.
    public mutating func start(now: Double, up: [Bool]) -> [Int] {
        let free = parallel - measuring.count
        guard free > 0 else { return [] }
        let due = lastStart.indices.filter { i in
            i < up.count && up[i] && !measuring.contains(i) && (lastStart[i].map { now - $0 >= interval } ?? true)
        }
        // Never measured first (as -infinity), then the longest ago; the scan's order breaks ties.
        let chosen = due.sorted { (lastStart[$0] ?? -.infinity, $0) < (lastStart[$1] ?? -.infinity, $1) }.prefix(free)
        for i in chosen {
            lastStart[i] = now
            measuring.insert(i)
        }
        return Array(chosen)
    }

    /// A measurement ended (or was dropped).
    public mutating func finish(_ pair: Int) {
        measuring.remove(pair)
    }
}

/// The order of an engine's resolver file while `monitor` runs: the pairs that are up, those with a
/// measured rate first by the download goodput of their latest measurement (answered queries per
/// second x the engine's payload bytes per answer, as `rank` ranks), best first; then those not
/// measured yet, accepted before spares, in the scan's order; then those measured at no rate at all.
public enum ResolverFileOrder {
    /// Indices into `pairs`; `bytesPerAnswer(i)` is the engine's payload bytes per answer through
    /// pair i, nil when the engine cannot use it (it is then left out).
    public static func order(_ pairs: [PairStability], bytesPerAnswer: (Int) -> Int?) -> [Int] {
        var measured: [(index: Int, goodput: Double)] = []
        var unmeasured: [Int] = []
        var stalled: [Int] = []
        for i in pairs.indices where pairs[i].up {
            guard let bytes = bytesPerAnswer(i) else { continue }
            guard let rate = pairs[i].rates?.last else { unmeasured.append(i); continue }
            let goodput = rate.answeredRate * Double(bytes)
            if goodput > 0 { measured.append((i, goodput)) } else { stalled.append(i) }
        }
        measured.sort { $0.goodput != $1.goodput ? $0.goodput > $1.goodput : $0.index < $1.index }
        unmeasured.sort { (pairs[$0].spare ? 1 : 0, $0) < (pairs[$1].spare ? 1 : 0, $1) }
        return measured.map(\.index) + unmeasured + stalled
    }
}
