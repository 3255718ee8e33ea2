/// What the engines do with a scan: one MTU for the whole session, the minimum over accepted pairs
/// within the loss threshold (`ScanPair.usable`).
public enum SyncedMTU {
    public static func synced(_ pairs: [ScanPair]) -> SyncedSizes {
        let accepted = pairs.filter(\.usable)
        return SyncedSizes(upload: accepted.compactMap { $0.upload?.bytes }.min(),
                                 download: accepted.compactMap { $0.download?.bytes }.min(),
                                 uploadQnameChars: accepted.compactMap { $0.upload?.qnameChars }.min(),
                                 downloadResponseSize: accepted.compactMap { $0.download?.responseSize }.min())
    }

    /// MasterDnsVPN's optional optimizer, in its spirit: drop low outliers (below `fraction` of the 75th
    /// percentile in either direction), at most `maxDropShare` of the accepted pairs, and only when the
    /// synced MTU gains at least `minGainUp`/`minGainDown` bytes or `minGainShare` of its value.
    /// Returned apart from `synced` so the user sees what it would cost.
    public static func optimize(_ pairs: [ScanPair], fraction: Double = 0.8, maxDropShare: Double = 0.25,
                                minGainUp: Int = 24, minGainDown: Int = 64, minGainShare: Double = 0.35) -> OptimizedSizes? {
        let accepted = pairs.filter { $0.usable && $0.upload != nil && $0.download != nil }
        guard accepted.count >= 4 else { return nil }
        func p75(_ values: [Int]) -> Double {
            let s = values.sorted()
            return Double(s[min(s.count - 1, Int((Double(s.count - 1) * 0.75).rounded()))])
        }
        let ups = accepted.map { $0.upload!.bytes }
        let downs = accepted.map { $0.download!.bytes }
        let upFloor = fraction * p75(ups)
        let downFloor = fraction * p75(downs)
        let dropped = accepted.filter { Double($0.upload!.bytes) < upFloor || Double($0.download!.bytes) < downFloor }
        guard !dropped.isEmpty, Double(dropped.count) <= maxDropShare * Double(accepted.count) else { return nil }
        let kept = accepted.filter { p in !dropped.contains { $0.resolver == p.resolver && $0.domain == p.domain } }
        guard let newUp = kept.map({ $0.upload!.bytes }).min(), let newDown = kept.map({ $0.download!.bytes }).min(),
              let oldUp = ups.min(), let oldDown = downs.min() else { return nil }
        let gainUp = newUp - oldUp
        let gainDown = newDown - oldDown
        let worth = gainUp >= minGainUp || gainDown >= minGainDown
            || Double(gainUp) >= minGainShare * Double(max(oldUp, 1))
            || Double(gainDown) >= minGainShare * Double(max(oldDown, 1))
        guard worth else { return nil }
        let rule = "drop pairs below \(Int(fraction * 100)) % of the 75th percentile (at most \(Int(maxDropShare * 100)) % of accepted pairs) when the synced MTU gains >= \(minGainUp) B up, >= \(minGainDown) B down or >= \(Int(minGainShare * 100)) %: +\(gainUp) B up, +\(gainDown) B down for \(dropped.count) of \(accepted.count) pairs"
        return OptimizedSizes(upload: newUp, download: newDown,
                              dropped: dropped.map { "\($0.resolver) \($0.domain)" }, rule: rule)
    }
}

/// The synced MTU: the minimum of each size over the accepted pairs.
public struct SyncedSizes: Codable, Sendable, Hashable {
    /// Minimum over accepted pairs (MasterDnsVPN's synced MTU), nil when none was accepted.
    public var upload: Int?
    public var download: Int?
    public var uploadQnameChars: Int?
    public var downloadResponseSize: Int?
    public init(upload: Int? = nil, download: Int? = nil, uploadQnameChars: Int? = nil, downloadResponseSize: Int? = nil) {
        self.upload = upload
        self.download = download
        self.uploadQnameChars = uploadQnameChars
        self.downloadResponseSize = downloadResponseSize
    }
}

/// What MasterDnsVPN's outlier optimizer would gain by dropping the pairs with the smallest sizes.
public struct OptimizedSizes: Codable, Sendable, Hashable {
    public var upload: Int
    public var download: Int
    /// The pairs the optimizer would drop ("ip:port domain") and what that costs.
    public var dropped: [String]
    public var rule: String
    public init(upload: Int, download: Int, dropped: [String], rule: String) {
        self.upload = upload
        self.download = download
        self.dropped = dropped
        self.rule = rule
    }
}
