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
