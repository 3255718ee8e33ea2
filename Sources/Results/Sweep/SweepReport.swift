/// sweep.json: the sweep's own figures (the MTU scan's are in scan.json).
public struct SweepReport: Codable, Sendable {
    public var schema = "tunnelprobe.sweep/1"
    public var seed: UInt64
    public var ranges: [String]
    public var rangeIssues: [String]
    public var addresses: UInt64
    public var planned: UInt64
    public var sample: UInt64?
    public var rate: Double
    /// Probes sent per second by this run (first to last probe).
    public var packetsPerSecond: Double?
    public var sentThisRun: UInt64
    public var sendErrors: UInt64
    public var lastSendError: String?
    public var swept: UInt64
    public var position: UInt64
    public var complete: Bool
    public var runs: Int
    public var resumedUnsettled: Bool
    public var answers: Int
    public var answering: Int
    /// Answers by what the echo probe found: "honest" (the responder's own answer) or the failure.
    public var answersByOutcome: [String: Int]
    public var unmatchedDatagrams: UInt64
    public var measured: Int
    public var accepted: Int
    public var seconds: Double
    /// Peak resident memory of the process (VmHWM, /proc/self/status), KiB: with the reports built
    /// (which hold every measured pair), and when the sweep and its MTU scans ended.
    public var peakRSSKiB: Int?
    public var peakRSSKiBBeforeReport: Int?
    /// Each --ranges file: its format, SHA-256 and, for a delegated file, the CIDRs per country.
    public var rangeFiles: [SweepRangeFile]?
    /// Where this sweep ran from (a shard's vantage, kept by `report merge`).
    public var vantage: String?
    /// The part of the permutation swept (`--shard I/N`); nil: all of it.
    public var shard: SweepShard?
    /// The merged blocks' digest (as sweep.state has it): shards of one sweep share it.
    public var rangesDigest: String?
    /// One entry per pass (`--passes`): addresses probed in it and the answers it added.
    public var passes: [Pass]?
    /// `--expand-neighbours`: what sweeping the prefixes of answering addresses first found.
    public var neighbours: Neighbours?
    /// `--send-path`: how the probes were sent, and why that way.
    public var sendPath: SweepSendPathReport?

    public struct Pass: Codable, Sendable {
        public var pass: Int
        /// Addresses probed in this pass (a later pass probes only what had not answered).
        public var probed: UInt64
        /// Addresses whose first answer came in this pass, and of those, answering (not REFUSED).
        public var newAnswers: Int
        public var newAnswering: Int
        public var complete: Bool

        public init(pass: Int, probed: UInt64, newAnswers: Int, newAnswering: Int, complete: Bool) {
            self.pass = pass
            self.probed = probed
            self.newAnswers = newAnswers
            self.newAnswering = newAnswering
            self.complete = complete
        }
    }

    public struct Neighbours: Codable, Sendable {
        public var prefixLength: Int
        /// Probes sent to neighbours by this run.
        public var probesThisRun: UInt64
        /// Answering addresses first probed as a neighbour of another.
        public var foundAsNeighbours: Int
        /// Of those, the ones the walk would not have probed at all (past the --sample's end):
        /// the hosts the expansion found beyond the sample.
        public var beyondSample: Int
        /// Prefixes (`a.b.c.0/24`) whose neighbours a stop cut short: part of each is not probed
        /// yet, and `--resume` probes it first. nil: none.
        public var cutShort: [String]?
        /// Neighbours of the cut-short prefixes not probed yet.
        public var unprobedNeighbours: Int?
        /// Answering addresses whose prefix a stop left unexpanded (`--resume` expands them first).
        public var unexpandedAnswers: Int?

        public init(prefixLength: Int, probesThisRun: UInt64, foundAsNeighbours: Int, beyondSample: Int) {
            self.prefixLength = prefixLength
            self.probesThisRun = probesThisRun
            self.foundAsNeighbours = foundAsNeighbours
            self.beyondSample = beyondSample
        }
    }

    public init(seed: UInt64, ranges: [String], rangeIssues: [String], addresses: UInt64, planned: UInt64,
                sample: UInt64?, rate: Double, packetsPerSecond: Double?, sentThisRun: UInt64, sendErrors: UInt64,
                lastSendError: String?, swept: UInt64, position: UInt64, complete: Bool, runs: Int,
                resumedUnsettled: Bool, answers: Int, answering: Int, answersByOutcome: [String: Int],
                unmatchedDatagrams: UInt64, measured: Int, accepted: Int, seconds: Double, peakRSSKiB: Int?,
                peakRSSKiBBeforeReport: Int?) {
        self.seed = seed
        self.ranges = ranges
        self.rangeIssues = rangeIssues
        self.addresses = addresses
        self.planned = planned
        self.sample = sample
        self.rate = rate
        self.packetsPerSecond = packetsPerSecond
        self.sentThisRun = sentThisRun
        self.sendErrors = sendErrors
        self.lastSendError = lastSendError
        self.swept = swept
        self.position = position
        self.complete = complete
        self.runs = runs
        self.resumedUnsettled = resumedUnsettled
        self.answers = answers
        self.answering = answering
        self.answersByOutcome = answersByOutcome
        self.unmatchedDatagrams = unmatchedDatagrams
        self.measured = measured
        self.accepted = accepted
        self.seconds = seconds
        self.peakRSSKiB = peakRSSKiB
        self.peakRSSKiBBeforeReport = peakRSSKiBBeforeReport
    }
}
