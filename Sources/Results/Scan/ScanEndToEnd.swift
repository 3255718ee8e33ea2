/// `scan --e2e`: the real engine started for each of the best accepted pairs, pinned to that one
/// resolver, and what it achieved, ranked by goodput (`ScanReport.endToEnd`, absent without --e2e).
public struct ScanEndToEnd: Codable, Sendable, Hashable {
    /// The engine `verify` started (`iodine`, `command`, ...).
    public var engine: String
    /// How many of the best accepted pairs were asked for (`--e2e-count`) and how they were chosen.
    public var requested: Int
    public var selection: String
    /// What the first data fetched and what the bulk download read.
    public var firstDataURL: String
    public var bulkURL: String?
    public var bulkBytes: Int?
    /// Each phase's deadline up to the handshake.
    public var deadlineMs: Int
    /// Ranked: pairs that carried the bulk download by goodput, highest first; then the pairs that
    /// passed the probes but failed end to end, in the scan's order.
    public var runs: [Run]
    /// Set when the runs stopped early (a signal), or nothing could be run.
    public var note: String?
    /// The tunnel domain the engine used for every pair, when not each pair's probe domain
    /// (`--e2e-domain profile`: the profile's, e.g. dnstt-server's own domain); nil: each run's `domain`.
    public var engineDomain: String?

    public init(engine: String, requested: Int, selection: String, firstDataURL: String, bulkURL: String?, bulkBytes: Int?,
                deadlineMs: Int, runs: [Run], note: String? = nil, engineDomain: String? = nil) {
        self.engine = engine
        self.requested = requested
        self.selection = selection
        self.firstDataURL = firstDataURL
        self.bulkURL = bulkURL
        self.bulkBytes = bulkBytes
        self.deadlineMs = deadlineMs
        self.runs = Self.ranked(runs)
        self.note = note
        self.engineDomain = engineDomain
    }

    public struct Run: Codable, Sendable, Hashable {
        /// 1 for the highest goodput; nil for a pair that failed end to end.
        public var rank: Int?
        public var resolver: String
        public var domain: String
        /// The engine came up, carried the first data and (when asked) the bulk download.
        public var ok: Bool
        /// verify's verdict for the run: pass, fail or incomplete.
        public var verdict: String
        /// Milliseconds from the engine's start to its handshake evidence.
        public var handshakeMs: Int?
        /// Milliseconds from the handshake to the first answer through the tunnel.
        public var firstDataMs: Int?
        /// The bulk download: time to its first byte, body bytes, duration and goodput (RFC 2647 3.17).
        public var timeToFirstByteMs: Double?
        public var bulkBytes: Int?
        public var bulkMs: Double?
        public var goodputBytesPerSecond: Double?
        /// Where and why it failed end to end, and the engine's own words.
        public var failedPhase: String?
        public var reason: String?
        public var engineWords: [String]

        public init(resolver: String, domain: String, result: VerifyResult) {
            self.resolver = resolver
            self.domain = domain
            verdict = result.verdict.rawValue
            ok = result.verdict == .pass
            handshakeMs = result.handshake.timeMs
            firstDataMs = result.transfer?.firstDataMs
            timeToFirstByteMs = result.transfer?.timeToFirstByteMs
            bulkBytes = result.transfer?.bulkBytes
            bulkMs = result.transfer?.bulkMs
            goodputBytesPerSecond = result.transfer?.goodputBytesPerSecond
            failedPhase = result.failure?.phase
            reason = result.reason
            engineWords = result.failure?.engineWords ?? []
        }

        /// A pair the engine could not even be started for (the sandbox could not be made).
        public init(resolver: String, domain: String, error: String) {
            self.resolver = resolver
            self.domain = domain
            verdict = Verdict.fail.rawValue
            ok = false
            failedPhase = "sandbox"
            reason = error
            engineWords = []
        }
    }

    /// Passing runs by goodput (highest first, a run without a bulk figure after those with one),
    /// then failing ones in their original order; ranks numbered over the passing runs.
    static func ranked(_ runs: [Run]) -> [Run] {
        let passing = runs.enumerated().filter { $0.element.ok }.sorted { a, b in
            let (x, y) = (a.element.goodputBytesPerSecond ?? -1, b.element.goodputBytesPerSecond ?? -1)
            return x != y ? x > y : a.offset < b.offset
        }.map(\.element)
        let failing = runs.filter { !$0.ok }
        var out: [Run] = []
        for (index, var run) in passing.enumerated() {
            run.rank = index + 1
            out.append(run)
        }
        for var run in failing {
            run.rank = nil
            out.append(run)
        }
        return out
    }
}
