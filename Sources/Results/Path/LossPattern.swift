public import Base
/// RFC 3357 loss patterns of a binary loss trace (true = lost), in sequence order.
///
/// - Loss period (RFC 3357 section 4): a run of consecutive lost packets; its length is the number of
///   packets in it.
/// - Loss distance (RFC 3357 section 4): the difference in sequence numbers between a lost packet and
///   the previous lost packet (1 inside a burst).
public struct LossPattern: Codable, Sendable, Hashable {
    public var samples: Int
    public var lost: Int
    /// Number of loss periods.
    public var periods: Int
    /// Histogram of period lengths: length (as text, JSON keys are strings) -> how many periods.
    public var periodLengths: [String: Int]
    /// Mean loss period length, nil without any loss.
    @NullCoded public var meanPeriodLength: Double?
    /// Histogram of loss distances: distance -> how many lost packets followed a loss at that distance.
    public var distances: [String: Int]
    @NullCoded public var reason: String?

    public init(lostFlags trace: [Bool]) {
        samples = trace.count
        lost = trace.lazy.filter { $0 }.count
        var lengths: [Int: Int] = [:]
        var gaps: [Int: Int] = [:]
        var run = 0
        var previousLoss: Int?
        for (index, isLost) in trace.enumerated() {
            if isLost {
                run += 1
                if let previousLoss { gaps[index - previousLoss, default: 0] += 1 }
                previousLoss = index
            } else if run > 0 {
                lengths[run, default: 0] += 1
                run = 0
            }
        }
        if run > 0 { lengths[run, default: 0] += 1 }
        periods = lengths.values.reduce(0, +)
        periodLengths = Dictionary(uniqueKeysWithValues: lengths.map { (String($0.key), $0.value) })
        distances = Dictionary(uniqueKeysWithValues: gaps.map { (String($0.key), $0.value) })
        meanPeriodLength = periods > 0 ? Double(lost) / Double(periods) : nil
        reason = samples == 0 ? "no samples" : (lost == 0 ? "no loss observed" : nil)
    }
}

