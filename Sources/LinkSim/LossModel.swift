/// A synthetic channel when no trace is at hand: `bernoulli:p=0.05` or `ge:p=0.01,r=0.3,h=0.2`,
/// each with optional `delay=` (one-way ms, constant) and `rate=` (opportunities per second).
///
/// Gilbert-Elliott as in docs (measurement.md): Good loses nothing, Bad delivers with probability h
/// (h = P(received | Bad)); p = P(Good -> Bad), r = P(Bad -> Good) per packet.
public struct LossModel: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        case bernoulli
        case ge
    }

    public var kind: Kind
    public var p: Double
    public var r: Double
    public var h: Double
    public var delayMs: Double
    public var opportunitiesPerSecond: Double

    public static let defaultDelayMs = 100.0
    public static let defaultRate = 500.0

    public init(kind: Kind, p: Double, r: Double = 1, h: Double = 0, delayMs: Double = defaultDelayMs,
                opportunitiesPerSecond: Double = defaultRate) {
        self.kind = kind
        self.p = p
        self.r = r
        self.h = h
        self.delayMs = delayMs
        self.opportunitiesPerSecond = opportunitiesPerSecond
    }

    /// Long-run loss rate: p for Bernoulli; for Gilbert-Elliott the share of time in Bad, p / (p + r),
    /// times the loss in Bad, 1 - h.
    public var meanLoss: Double {
        switch kind {
        case .bernoulli: p
        case .ge: p + r > 0 ? p / (p + r) * (1 - h) : 0
        }
    }

    public var description: String {
        var s = kind == .bernoulli ? "bernoulli:p=\(p)" : "ge:p=\(p),r=\(r),h=\(h)"
        s += ",delay=\(delayMs),rate=\(opportunitiesPerSecond)"
        return s
    }

    public static func parse(_ text: String) throws(SimulationError) -> LossModel {
        let head = text.split(separator: ":", maxSplits: 1).map(String.init)
        guard let name = head.first, let kind = Kind(rawValue: name.lowercased()) else {
            throw SimulationError("--model \(text): unknown model (bernoulli:p=..., or ge:p=...,r=...,h=...)")
        }
        var values: [String: Double] = [:]
        if head.count == 2 {
            for pair in head[1].split(separator: ",") {
                let kv = pair.split(separator: "=", maxSplits: 1).map(String.init)
                guard kv.count == 2, let v = Double(kv[1]), v.isFinite else {
                    throw SimulationError("--model \(text): \"\(pair)\" is not key=number")
                }
                values[kv[0].lowercased()] = v
            }
        }
        let allowed: Set<String> = kind == .bernoulli ? ["p", "delay", "rate"] : ["p", "r", "h", "delay", "rate"]
        if let unknown = values.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw SimulationError("--model \(text): unknown parameter \"\(unknown)\" (\(allowed.sorted().joined(separator: ", ")))")
        }
        func probability(_ key: String) throws(SimulationError) -> Double {
            guard let v = values[key] else { throw SimulationError("--model \(text): \(key)= is required") }
            guard (0...1).contains(v) else { throw SimulationError("--model \(text): \(key) must be in [0, 1], got \(v)") }
            return v
        }
        let delay = values["delay"] ?? defaultDelayMs
        guard delay >= 0, delay <= 600_000 else { throw SimulationError("--model \(text): delay must be 0...600000 ms") }
        let rate = values["rate"] ?? defaultRate
        guard rate > 0, rate <= 1_000_000 else { throw SimulationError("--model \(text): rate must be in (0, 1000000] per second") }
        switch kind {
        case .bernoulli:
            return LossModel(kind: .bernoulli, p: try probability("p"), delayMs: delay, opportunitiesPerSecond: rate)
        case .ge:
            return LossModel(kind: .ge, p: try probability("p"), r: try probability("r"), h: try probability("h"),
                             delayMs: delay, opportunitiesPerSecond: rate)
        }
    }
}

/// Bad input to the simulator, one line for the CLI.
public struct SimulationError: Error, CustomStringConvertible, Sendable, Equatable {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}
