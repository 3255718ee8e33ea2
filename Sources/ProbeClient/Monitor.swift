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

    public init(resolver: Endpoint, zone: DNSName, queryCharacters: Int, answerBytes: Int, spare: Bool) {
        self.resolver = resolver
        self.zone = zone
        self.queryCharacters = queryCharacters
        self.answerBytes = answerBytes
        self.spare = spare
    }

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
    private var recentRtts: [Double] = []

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
                recentRtts.append(rttMs)
                if recentRtts.count > Self.rttWindow { recentRtts.removeFirst(recentRtts.count - Self.rttWindow) }
                let sorted = recentRtts.sorted()
                rttP50Ms = sorted[(sorted.count - 1) / 2]
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

    enum CodingKeys: String, CodingKey {
        case resolver, domain, spare, checks, passed, up, lastFailureAt, transitions, outages, outagesDropped, rttP50Ms
        case sizeFailures, lastDrift, leastQueryCharacters, leastAnswerBytes
    }
}
