public import Base

/// A synthetic channel when no trace is at hand: `bernoulli:p=0.05` or `ge:p=0.01,r=0.3,h=0.2[,k=0.99]`,
/// each with optional `delay=` (one-way ms, constant) and `rate=` (opportunities per second).
///
/// The Gilbert-Elliott parameters and their meaning are `GilbertElliottParameters`, the same the
/// impairment relay takes (docs/MEASUREMENT.md).
public struct LossModel: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        case bernoulli
        case ge
    }

    public var kind: Kind
    public var p: Double
    public var r: Double
    public var h: Double
    /// P(received | Good); 1 (Gilbert's model) unless given.
    public var k: Double
    public var delayMs: Double
    public var opportunitiesPerSecond: Double

    public static let defaultDelayMs = 100.0
    public static let defaultRate = 500.0

    public init(kind: Kind, p: Double, r: Double = 1, h: Double = 0, k: Double = 1, delayMs: Double = defaultDelayMs,
                opportunitiesPerSecond: Double = defaultRate) {
        self.kind = kind
        self.p = p
        self.r = r
        self.h = h
        self.k = k
        self.delayMs = delayMs
        self.opportunitiesPerSecond = opportunitiesPerSecond
    }

    /// Long-run loss rate: p for Bernoulli; for Gilbert-Elliott the stationary loss of the chain.
    public var meanLoss: Double {
        switch kind {
        case .bernoulli: p
        case .ge: GilbertElliottParameters(p: p, r: r, h: h, k: k).stationaryLoss
        }
    }

    public var description: String {
        var s = kind == .bernoulli ? "bernoulli:p=\(p)" : "ge:p=\(p),r=\(r),h=\(h)"
        if kind == .ge, k != 1 { s += ",k=\(k)" }
        s += ",delay=\(delayMs),rate=\(opportunitiesPerSecond)"
        return s
    }

    public static func parse(_ text: String) throws(TextFormError) -> LossModel {
        let head = text.split(separator: ":", maxSplits: 1).map(String.init)
        guard let name = head.first, let kind = Kind(rawValue: name.lowercased()) else {
            throw TextFormError("unknown model (bernoulli:p=..., or ge:p=...,r=...,h=...)")
        }
        let allowed = kind == .bernoulli ? ["p", "delay", "rate"] : GilbertElliottParameters.keys + ["delay", "rate"]
        let values: [String: Double]
        values = head.count == 2 ? try KeyValueList.parse(head[1], allowed: allowed) : [:]
        let delay = values["delay"] ?? defaultDelayMs
        guard delay >= 0, delay <= 600_000 else { throw TextFormError("delay must be 0...600000 ms") }
        let rate = values["rate"] ?? defaultRate
        guard rate > 0, rate <= 1_000_000 else { throw TextFormError("rate must be in (0, 1000000] per second") }
        switch kind {
        case .bernoulli:
            guard let p = values["p"] else { throw TextFormError("p= is required") }
            guard (0...1).contains(p) else { throw TextFormError("p must be in [0, 1], got \(p)") }
            return LossModel(kind: .bernoulli, p: p, delayMs: delay, opportunitiesPerSecond: rate)
        case .ge:
            let ge = try GilbertElliottParameters(fields: values)
            return LossModel(kind: .ge, p: ge.p, r: ge.r, h: ge.h, k: ge.k, delayMs: delay, opportunitiesPerSecond: rate)
        }
    }
}

/// Input the simulator cannot use: a fates file without the streams it needs, or a resolver the
/// file does not have. One line, naming no flag (the command adds its own).
public enum SimulationError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The resolver asked for has no stream in the fates file; `have` lists those it has.
    case unknownResolver(String, have: [String])
    /// The fates file has no stream for this direction (nor a round-trip one) for the resolver.
    case noStream(direction: String, resolver: String)
    /// A stream's fates cannot drive a channel.
    case unusableStream(String)

    public var description: String {
        switch self {
        case let .unknownResolver(resolver, have):
            "no stream for \(resolver) in the fates file (have \(have.joined(separator: ", ")))"
        case let .noStream(direction, resolver):
            "the fates file has no \(direction) or roundTrip stream for \(resolver)"
        case let .unusableStream(reason): reason
        }
    }
}
