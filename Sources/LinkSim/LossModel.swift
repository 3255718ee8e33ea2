public import Base

/// A synthetic channel when no trace is at hand: `bernoulli:p=0.05` or `ge:p=0.01,r=0.3,h=0.2[,k=0.99]`,
/// each with optional `delay=` (one-way ms, constant) and `rate=` (opportunities per second).
///
/// The loss process, its text and its checks are Base's `LossProcess`, the same the impairment relay
/// runs (docs/MEASUREMENT.md); the delay and the rate are the simulator's own.
public struct LossModel: Sendable, Hashable, CustomStringConvertible {
    public var process: LossProcess
    public var delayMs: Double
    public var opportunitiesPerSecond: Double

    public static let defaultDelayMs = 100.0
    public static let defaultRate = 500.0

    public init(_ process: LossProcess, delayMs: Double = defaultDelayMs, opportunitiesPerSecond: Double = defaultRate) {
        self.process = process
        self.delayMs = delayMs
        self.opportunitiesPerSecond = opportunitiesPerSecond
    }

    /// Long-run loss rate: p for Bernoulli; for Gilbert-Elliott the stationary loss of the chain.
    public var meanLoss: Double { process.meanLoss }

    public var description: String { "\(process),delay=\(delayMs),rate=\(opportunitiesPerSecond)" }

    public static func parse(_ text: String) throws(TextFormError) -> LossModel {
        let (kind, values) = try LossProcess.fields(text, extraKeys: ["delay", "rate"])
        let delay = values["delay"] ?? defaultDelayMs
        guard delay >= 0, delay <= 600_000 else { throw TextFormError("delay must be 0...600000 ms") }
        let rate = values["rate"] ?? defaultRate
        guard rate > 0, rate <= 1_000_000 else { throw TextFormError("rate must be in (0, 1000000] per second") }
        return LossModel(try LossProcess(kind, fields: values), delayMs: delay, opportunitiesPerSecond: rate)
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
