/// What the scan's congestion window (ProbeClient `CongestionWindow`) did during a scan (`scan.json` `congestion`).
public struct CongestionWindowStats: Codable, Sendable, Hashable {
    public var initialWindow: Int
    public var ceiling: Int
    public var floor: Int
    /// Halvings of the window (congestion signals acted on).
    public var decreases = 0
    /// Timeouts of queries that should have been answered (each a congestion signal; at most one
    /// decrease per window of them).
    public var signals = 0
    public var smallestWindow: Int
    public var largestWindow: Int
    public var finalWindow: Int
    /// Queries that waited for a place in the window.
    public var waited = 0
    /// Probes asked once more when the scan was quiet after they timed out (`timeoutRule`:
    /// reachability, echo, a size that was only lost, confirmation), and how many were answered.
    /// (Optional: reports written before the rule have neither.)
    public var quietRetries: Int? = 0
    public var quietRetriesAnswered: Int? = 0
    /// When a timeout is evidence that a pair does not answer, in words (the rule this scan applied).
    public var timeoutRule: String? = CongestionWindowStats.timeoutRule
    /// Resolvers judged individually lossy and their timeouts, from reports of the own-loss rule
    /// (off by default, then replaced by the background share of `lossRule`); new reports leave
    /// them out. Kept so that those reports still read.
    /// The scan's background loss share when it ended (`lossRule`): expected answers lost after the
    /// first halving and not met by another, a moving average; nil before any halving.
    public var backgroundShare: Double?
    public var ownLossResolvers: Int?
    public var ownLosses: Int?
    /// Which lost answers count as the scan's congestion, in words (the rule this scan applied;
    /// `CongestionWindow.lossRule` in ProbeClient, which owns the constants it names).
    public var lossRule: String?

    /// When a timeout is evidence that a pair does not answer (`CongestionWindow` applies it).
    public static let timeoutRule = "A reachability or echo probe that times out is asked once more when the scan is quiet "
        + "(nothing waiting for the congestion window, at most half the window of queries in flight); the pair is called "
        + "unreachable only when that quiet retry times out too, with no decrease while it was in flight and no expected answer "
        + "of another query lost meanwhile (otherwise it is retried again, up to three quiet retries in all). "
        + "Every later stage applies the same rule: a size whose every try was only lost (the lowest size of the upload "
        + "or download search, or the size just above the best) rejects the pair or bounds its MTU only when its quiet "
        + "retry is lost the same way, and while fewer than half of the confirmation probes passed, each that timed out "
        + "is asked quietly before the pair is rejected."

    public init(initialWindow: Int, ceiling: Int, floor: Int, lossRule: String? = nil) {
        self.lossRule = lossRule
        self.initialWindow = initialWindow
        self.ceiling = ceiling
        self.floor = floor
        smallestWindow = initialWindow
        largestWindow = initialWindow
        finalWindow = initialWindow
    }
}
