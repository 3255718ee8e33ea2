public import Base
public import DNSWire

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
    @discardableResult
    public mutating func record(ok: Bool, at: Double, rttMs: Double?, failure: String?) -> Bool {
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
    }
}
