public import DNSWire
public import NIOCore
public import ProbeProtocol

/// Closed-loop load like `dnsperf -q N`: N queries outstanding, a new one sent as each completes.
/// Every query is a fresh authenticated echo probe, so the responder does its full work for each.
public struct LoadGenerator: Sendable {
    public struct Result: Sendable {
        public var sent: Int
        public var answered: Int
        public var timedOut: Int
        public var seconds: Double
        public var queriesPerSecond: Double { Double(answered) / seconds }
    }

    public var prober: Prober
    public var zone: DNSName

    public init(prober: Prober, zone: DNSName) {
        self.prober = prober
        self.zone = zone
    }

    public func run(target: ResolverAddress, outstanding: Int, duration: Duration) async -> Result {
        let start = ContinuousClock.now
        let deadline = start + duration
        let totals = await withTaskGroup(of: (Int, Int, Int).self) { group in
            for _ in 0..<max(1, outstanding) {
                group.addTask {
                    var sent = 0, answered = 0, lost = 0
                    while ContinuousClock.now < deadline {
                        let o = await prober.upload(target, zone: zone, characters: ProbeMeta.characterCount, kind: .echo)
                        sent += 1
                        if o.ok { answered += 1 } else if o.failure == .timeout { lost += 1 }
                    }
                    return (sent, answered, lost)
                }
            }
            var t = (0, 0, 0)
            for await r in group { t = (t.0 + r.0, t.1 + r.1, t.2 + r.2) }
            return t
        }
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return Result(sent: totals.0, answered: totals.1, timedOut: totals.2, seconds: seconds)
    }

    /// Query names for a dnsperf data file (`name TXT` lines): the same echo probes, made in advance.
    public func dnsperfLines(count: Int) throws -> String {
        var lines: [String] = []
        lines.reserveCapacity(count)
        for _ in 0..<count {
            let meta = ProbeMeta(kind: .echo, nonce: Prober.nonce(), totalCharacters: ProbeMeta.characterCount)
            lines.append("\(try ProbeName.build(meta: meta, zone: zone, key: prober.key)) TXT")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
