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
    /// Reachability and echo probes asked once more when the scan was quiet, because their
    /// timeouts came while it was busy or congested (`timeoutRule`), and how many of them were answered.
    /// (Optional: reports written before the rule have neither.)
    public var quietRetries: Int? = 0
    public var quietRetriesAnswered: Int? = 0
    /// When a timeout is evidence that a pair does not answer, in words (the rule this scan applied).
    public var timeoutRule: String? = CongestionWindowStats.timeoutRule
    /// Resolvers judged individually lossy (`lossRule`), and the timeouts of expected answers that
    /// were theirs and so no congestion signal. (Optional: reports written before the rule have neither.)
    public var ownLossResolvers: Int? = 0
    public var ownLosses: Int? = 0
    /// Which lost answers count as the scan's congestion, in words (the rule this scan applied;
    /// `CongestionWindow.lossRule` in ProbeClient, which owns the constants it names).
    public var lossRule: String?

    /// When a timeout is evidence that a pair does not answer (`CongestionWindow` applies it).
    public static let timeoutRule = "A reachability or echo timeout is evidence only when its probe was sent while the scan was quiet "
        + "(nothing waiting for the congestion window, at most half the window of queries in flight) and no decrease came while it "
        + "was in flight; a timeout sent while the scan was busy or met by a decrease is retried when the scan is quiet, and the pair "
        + "is called unreachable only when that quiet retry times out too."

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
