/// `monitor.json`: the pairs of a scan re-checked at an interval (issue 19, item 4): each pair's
/// stability (share of checks passed with its Wilson 95 % interval, time since the last failure,
/// its outages), with `--rate-interval` its sustainable query rate measured again and again (first,
/// latest, lowest, highest), how often the engine's resolver file was rewritten, and the process's
/// memory as the checks went on. Every check and every rate measurement is a line of
/// `history.jsonl` beside it.
///
/// Schema 2 added `rates`, the rate fields of each pair and the heap figures of the memory samples
/// (all optional, so a schema 1 file decodes as 2).
public struct MonitorReport: Codable, Sendable, Hashable {
    public static let schemaName = "tunnelprobe.monitor/3"

    public var schema: String = MonitorReport.schemaName
    public var run: RunInfo
    public var scan: RunInfo
    public var intervalSeconds: Double
    public var attempts: Int
    public var timeoutMs: Int
    public var rounds: Int
    public var checks: Int
    public var elapsedSeconds: Double
    public var pairs: [PairStability]
    /// Times the resolver files were rewritten because the set of pairs that are up changed (the
    /// first write not counted), and when (seconds since the start).
    public var rewrites: Int
    public var rewriteTimes: [Double]
    /// The process's memory after 1, 10, 100, ... checks and at the end.
    public var memory: [MemorySample]
    /// The engines whose files are kept under exports/<engine>/.
    public var engines: [String]
    /// How rates were measured (`--rate-interval`); nil when they were not.
    public var rates: RateSettings?

    /// Resident size (VmRSS, kB) and, where the kernel and glibc give them, its anonymous part
    /// (RssAnon: heap and stacks, not the program's code pages) and the heap: bytes the program holds
    /// through malloc (mallinfo2 `uordblks` + `hblkhd`; chunks in glibc's per-thread caches count as
    /// held) and free bytes glibc keeps in its arenas (`fordblks`), both kB. A resident size that
    /// grows while the heap in use does not is the allocator keeping pages, not the program's data.
    public struct MemorySample: Codable, Sendable, Hashable {
        public var checks: Int
        public var rssKB: Int
        public var anonKB: Int?
        public var heapInUseKB: Int?
        public var heapFreeKB: Int?
        /// Threads of the process: an idle libdispatch worker ending frees its stack and caches.
        public var threads: Int?

        public init(checks: Int, rssKB: Int, anonKB: Int? = nil, heapInUseKB: Int? = nil, heapFreeKB: Int? = nil, threads: Int? = nil) {
            self.checks = checks
            self.rssKB = rssKB
            self.anonKB = anonKB
            self.heapInUseKB = heapInUseKB
            self.heapFreeKB = heapFreeKB
            self.threads = threads
        }
    }

    /// The rate measurements' bounds: every `intervalSeconds` per pair, `parallel` pairs at once,
    /// each `CapacityProbe`'s knee search with these settings (its ceiling and per-pair budget).
    public struct RateSettings: Codable, Sendable, Hashable {
        public var intervalSeconds: Double
        public var parallel: Int
        public var capacity: CapacitySettings

        public init(intervalSeconds: Double, parallel: Int, capacity: CapacitySettings) {
            self.intervalSeconds = intervalSeconds
            self.parallel = parallel
            self.capacity = capacity
        }
    }

    public init(run: RunInfo, scan: RunInfo, intervalSeconds: Double, attempts: Int, timeoutMs: Int, rounds: Int, checks: Int,
                elapsedSeconds: Double, pairs: [PairStability], rewrites: Int, rewriteTimes: [Double], memory: [MemorySample],
                engines: [String], rates: RateSettings? = nil) {
        self.run = run
        self.scan = scan
        self.intervalSeconds = intervalSeconds
        self.attempts = attempts
        self.timeoutMs = timeoutMs
        self.rounds = rounds
        self.checks = checks
        self.elapsedSeconds = elapsedSeconds
        self.pairs = pairs
        self.rewrites = rewrites
        self.rewriteTimes = rewriteTimes
        self.memory = memory
        self.engines = engines
        self.rates = rates
    }
}
