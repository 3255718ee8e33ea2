public import Base
import NIOCore

/// Why an impairment setting cannot be used: the setting (and its direction) and one line saying
/// why. No flag names: the command that read the setting puts its own flag in front.
public struct ImpairmentConfigError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The settings of `ImpairmentConfig` and `DirectionConfig` an error can name.
    public enum Setting: String, Sendable, Hashable, CaseIterable {
        case listen, upstream, listenAndUpstream, seed, log, servfail, replay, replayResolver, mappingIdle, vectorReads
        // Per direction.
        case loss, gilbertElliott, lossModel, delay, jitter, reorder, duplicate, rate, rateBurst, rateQueue, rateExcess
        case maxQName, maxSize, oversize, replayAndModel
    }

    public let setting: Setting
    /// The direction of a per-direction setting.
    public let direction: Direction?
    public let reason: String

    public init(_ setting: Setting, _ direction: Direction?, _ reason: String) {
        self.setting = setting
        self.direction = direction
        self.reason = reason
    }

    public init(_ setting: Setting, _ reason: String) {
        self.init(setting, nil, reason)
    }

    public var description: String { "\(direction.map { "\($0.rawValue) " } ?? "")\(setting.rawValue): \(reason)" }
}

extension ImpairmentConfig {
    /// Checks every setting and every combination; the first problem is thrown. The relay runs only
    /// a configuration that passed.
    public func validate() throws(ImpairmentConfigError) {
        if upstream.port == 0 { throw ImpairmentConfigError(.upstream, "port 0 cannot be sent to") }
        if let a = try? listen.socketAddress(), let b = try? upstream.socketAddress(), a == b {
            throw ImpairmentConfigError(.listenAndUpstream, "both are \(listen): the relay would send to itself")
        }
        if logPath?.isEmpty == true { throw ImpairmentConfigError(.log, "empty path") }
        try up.validate(.up)
        try down.validate(.down)
        try Check.probability(servfail, .servfail, nil)
        if replayPath?.isEmpty == true { throw ImpairmentConfigError(.replay, "empty path") }
        if replayResolver != nil, replayPath == nil { throw ImpairmentConfigError(.replayResolver, "needs a replay file") }
        try Check.range(mappingIdleSeconds, 0.1...86_400, .mappingIdle, nil)
        guard (1...256).contains(vectorReads) else {
            throw ImpairmentConfigError(.vectorReads, "\(vectorReads) is outside 1...256")
        }
    }
}

extension DirectionConfig {
    /// Checks the direction's values and combinations (`direction` names it in the error).
    public func validate(_ direction: Direction) throws(ImpairmentConfigError) {
        let d = direction
        switch loss {
        case .bernoulli(let p)?:
            try Check.probability(p, .loss, d)
        case .gilbertElliott(let ge)?:
            do {
                _ = try GilbertElliottParameters(fields: ["p": ge.p, "r": ge.r, "h": ge.h, "k": ge.k])
            } catch {
                throw ImpairmentConfigError(.gilbertElliott, d, error.reason)
            }
            guard [ge.p, ge.r, ge.h, ge.k].allSatisfy(\.isFinite) else { throw ImpairmentConfigError(.gilbertElliott, d, "a value is not a number") }
        case nil:
            break
        }
        try Check.range(delayMs, 0...60_000, .delay, d)
        try Check.range(jitterMs, 0...60_000, .jitter, d)
        if jitterMs > 0, delayMs <= 0 {
            throw ImpairmentConfigError(.jitter, d, "needs a delay above 0 (jitter varies a delay)")
        }
        if let reorder {
            try Check.probability(reorder.probability, .reorder, d)
            guard (1...1000).contains(reorder.gap) else { throw ImpairmentConfigError(.reorder, d, "gap \(reorder.gap) is outside 1...1000") }
        }
        try Check.probability(duplicate, .duplicate, d)
        if let rate { try Check.range(rate, 1...100_000_000, .rate, d) }
        guard (1...1_000_000).contains(rateBurst) else { throw ImpairmentConfigError(.rateBurst, d, "\(rateBurst) is outside 1...1000000") }
        guard (0...1_000_000).contains(rateQueue) else { throw ImpairmentConfigError(.rateQueue, d, "\(rateQueue) is outside 0...1000000") }
        if rate == nil, rateBurst != DirectionConfig().rateBurst { throw ImpairmentConfigError(.rateBurst, d, "needs a rate") }
        if rate == nil, rateQueue != DirectionConfig().rateQueue { throw ImpairmentConfigError(.rateQueue, d, "needs a rate") }
        if rateExcess == .refuse {
            guard rate != nil else { throw ImpairmentConfigError(.rateExcess, d, "needs a rate") }
            guard d == .up else { throw ImpairmentConfigError(.rateExcess, d, "only queries can be refused") }
        }
        if let maxQName, !(1...1_000).contains(maxQName) { throw ImpairmentConfigError(.maxQName, d, "\(maxQName) is outside 1...1000") }
        if let maxSize, !(12...65_535).contains(maxSize) { throw ImpairmentConfigError(.maxSize, d, "\(maxSize) is outside 12...65535") }
        if oversize != .drop, maxSize == nil { throw ImpairmentConfigError(.oversize, d, "needs a size limit") }
        if d == .up, oversize == .truncate {
            throw ImpairmentConfigError(.oversize, d, "truncate applies to responses only; use drop for queries")
        }
    }
}

private enum Check {
    static func probability(_ p: Double, _ setting: ImpairmentConfigError.Setting, _ d: Direction?) throws(ImpairmentConfigError) {
        guard p.isFinite else { throw ImpairmentConfigError(setting, d, "\(p) is not a number") }
        guard (0...1).contains(p) else { throw ImpairmentConfigError(setting, d, "\(format(p)) is not a probability within 0...1") }
    }

    static func range(_ x: Double, _ range: ClosedRange<Double>, _ setting: ImpairmentConfigError.Setting,
                      _ d: Direction?) throws(ImpairmentConfigError) {
        guard x.isFinite else { throw ImpairmentConfigError(setting, d, "\(x) is not a number") }
        guard range.contains(x) else {
            throw ImpairmentConfigError(setting, d, "\(format(x)) is outside \(format(range.lowerBound))...\(format(range.upperBound))")
        }
    }

    static func format(_ x: Double) -> String { x == x.rounded() && abs(x) < 1e15 ? String(Int(x)) : String(x) }
}
