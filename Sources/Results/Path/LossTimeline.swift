/// Loss over the run, in equal slices of send time: what a chart of "loss over time" draws, with the
/// loss bursts (RFC 3357 loss periods) of each slice kept so that the chart can mark them.
public struct LossTimeline: Codable, Sendable, Hashable {
    public struct Slice: Codable, Sendable, Hashable {
        /// Send time of the slice's start, milliseconds since the first probe.
        public var startMs: Double
        public var sent: Int
        public var lostUp: Int
        public var lostDown: Int
        public var lostUnknown: Int
        /// Longest RFC 3357 loss period (consecutive round-trip losses in sequence order) that began here.
        public var longestBurst: Int
    }

    public var sliceMs: Double
    public var slices: [Slice]

    /// At most this many slices, each at least `minimumSliceMs` long.
    public static let maximumSlices = 120
    public static let minimumSliceMs = 100.0

    /// - Parameters: `sentNanos` per probe in sequence order, and the fate of each.
    public init(sentNanos: [UInt64], fates: [PathFate]) {
        guard let last = sentNanos.max(), !sentNanos.isEmpty else {
            sliceMs = Self.minimumSliceMs
            slices = []
            return
        }
        let spanMs = Double(last) / 1e6
        let width = Swift.max(Self.minimumSliceMs, (spanMs / Double(Self.maximumSlices)).rounded(.up))
        let count = Int(spanMs / width) + 1
        var s = (0..<count).map { Slice(startMs: Double($0) * width, sent: 0, lostUp: 0, lostDown: 0, lostUnknown: 0, longestBurst: 0) }
        func slice(_ i: Int) -> Int { Swift.min(count - 1, Int(Double(sentNanos[i]) / 1e6 / width)) }
        var burstStart: Int?
        for i in sentNanos.indices {
            let k = slice(i)
            s[k].sent += 1
            switch fates[i] {
            case .delivered: break
            case .lostUp: s[k].lostUp += 1
            case .lostDown: s[k].lostDown += 1
            case .lostUnknown: s[k].lostUnknown += 1
            }
            let lost = fates[i] != .delivered
            if lost, burstStart == nil { burstStart = i }
            if let start = burstStart, !lost || i == sentNanos.count - 1 {
                let length = (lost ? i + 1 : i) - start
                let home = slice(start)
                s[home].longestBurst = Swift.max(s[home].longestBurst, length)
                burstStart = nil
            }
        }
        sliceMs = width
        slices = s
    }
}
