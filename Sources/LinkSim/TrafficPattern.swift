public import Base
/// When the application hands packets to the tunnel, and how big they are.
///
/// - `bulk`: a transfer that always has data: a new full-size packet whenever the window lets one out
///   (`bulk:rate=R` paces it at R packets per second instead).
/// - `cbr:rate=R[,size=B]`: constant bit rate, one B-byte packet every 1/R s (voice, games).
/// - `interactive:burst=N,gap=MS[,size=B]`: bursts of N packets separated by exponential gaps of mean
///   MS ms (web-like request and response), seeded.
public struct TrafficPattern: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        case bulk, cbr, interactive
    }

    public var kind: Kind
    /// Packets per second (bulk paced, cbr); nil for greedy bulk.
    public var rate: Double?
    /// Payload bytes per packet; nil: the symbol size.
    public var size: Int?
    public var burst: Int
    public var gapMs: Double

    public init(kind: Kind, rate: Double? = nil, size: Int? = nil, burst: Int = 10, gapMs: Double = 200) {
        self.kind = kind
        self.rate = rate
        self.size = size
        self.burst = burst
        self.gapMs = gapMs
    }

    public static let greedy = TrafficPattern(kind: .bulk)

    /// True when the source always has data (offers exactly when the sender can send).
    public var isGreedy: Bool { kind == .bulk && rate == nil }

    public var description: String {
        switch kind {
        case .bulk: rate.map { "bulk:rate=\($0)" } ?? "bulk"
        case .cbr: "cbr:rate=\(rate ?? 0)" + (size.map { ",size=\($0)" } ?? "")
        case .interactive: "interactive:burst=\(burst),gap=\(gapMs)" + (size.map { ",size=\($0)" } ?? "")
        }
    }

    public static func parse(_ text: String) throws(TextFormError) -> TrafficPattern {
        let head = text.split(separator: ":", maxSplits: 1).map(String.init)
        guard let name = head.first, let kind = Kind(rawValue: name.lowercased()) else {
            throw TextFormError("unknown pattern (bulk, bulk:rate=R, cbr:rate=R, interactive:burst=N,gap=MS)")
        }
        var values: [String: Double] = [:]
        var greedyRate = false
        if head.count == 2 {
            for pair in head[1].split(separator: ",") {
                let kv = pair.split(separator: "=", maxSplits: 1).map(String.init)
                if kv.count == 2, kv[0] == "rate", kv[1] == "max", kind == .bulk {
                    greedyRate = true
                    continue
                }
                guard kv.count == 2, let v = Double(kv[1]), v.isFinite, v > 0 else {
                    throw TextFormError("\"\(pair)\" is not key=positive number")
                }
                values[kv[0].lowercased()] = v
            }
        }
        let allowed: Set<String> = switch kind {
        case .bulk: ["rate"]
        case .cbr: ["rate", "size"]
        case .interactive: ["burst", "gap", "size"]
        }
        if let unknown = values.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw TextFormError("unknown parameter \"\(unknown)\" (\(allowed.sorted().joined(separator: ", ")))")
        }
        if let rate = values["rate"], rate > 1_000_000 { throw TextFormError("rate must be at most 1000000/s") }
        var size: Int?
        if let s = values["size"] {
            guard s == s.rounded(), (1...65_535).contains(s) else { throw TextFormError("size must be 1...65535 bytes") }
            size = Int(s)
        }
        switch kind {
        case .bulk:
            return TrafficPattern(kind: .bulk, rate: greedyRate ? nil : values["rate"])
        case .cbr:
            guard let rate = values["rate"] else { throw TextFormError("rate= is required") }
            return TrafficPattern(kind: .cbr, rate: rate, size: size)
        case .interactive:
            let burst = values["burst"] ?? 10
            guard burst == burst.rounded(), (1...100_000).contains(burst) else {
                throw TextFormError("burst must be a whole number 1...100000")
            }
            return TrafficPattern(kind: .interactive, size: size, burst: Int(burst), gapMs: values["gap"] ?? 200)
        }
    }
}
