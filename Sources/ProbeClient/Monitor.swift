public import Base
public import Results
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
