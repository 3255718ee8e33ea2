public import ProbeClient

/// Which loss process a direction runs, as configured.
public enum LossModel: Sendable, Hashable {
    /// Every datagram is lost independently with probability `p`.
    case bernoulli(Double)
    case gilbertElliott(GilbertElliott.Parameters)
}

/// Independent (Bernoulli) loss: the memoryless model of RFC 3357's "random loss".
public struct BernoulliLoss: Sendable, Hashable {
    public let probability: Double

    public init(probability: Double) { self.probability = probability }

    /// One draw: true when this datagram is lost.
    public func isLost(using rng: inout SplitMix64) -> Bool {
        probability > 0 && rng.unitInterval() < probability
    }
}

/// The Gilbert-Elliott channel: a two-state Markov chain (Good, Bad) stepped once per datagram,
/// with a loss probability per state. Conventions are those of `measurement.md`, which the path
/// report's Gilbert fit uses:
/// - `p` = P(Good -> Bad), `r` = P(Bad -> Good), per datagram;
/// - `h` = P(received | Bad) (so a Bad datagram is lost with 1 - h; h = 0 is Gilbert's 2-state
///   model where every Bad datagram is lost);
/// - `k` = P(received | Good), 1 unless given (Elliott's extension; k = 1 is the Gilbert model
///   the fit in measurement.md assumes).
/// The chain starts in Good. For each datagram the state in force decides its fate, then the chain
/// steps: the first datagram is judged in Good.
public struct GilbertElliott: Sendable, Hashable {
    public struct Parameters: Sendable, Hashable {
        public var p: Double
        public var r: Double
        public var h: Double
        public var k: Double

        public init(p: Double, r: Double, h: Double = 0, k: Double = 1) {
            self.p = p
            self.r = r
            self.h = h
            self.k = k
        }

        /// Long-run loss rate: pi_B (1 - h) + pi_G (1 - k), with pi_B = p / (p + r).
        public var stationaryLoss: Double {
            guard p + r > 0 else { return 1 - k }
            let bad = p / (p + r)
            return bad * (1 - h) + (1 - bad) * (1 - k)
        }
    }

    public enum State: String, Sendable, Hashable {
        case good, bad
    }

    public let parameters: Parameters
    public private(set) var state: State = .good

    public init(_ parameters: Parameters) { self.parameters = parameters }

    /// Judges one datagram in the current state, then steps the chain. Always two draws, so the
    /// sequence of states does not depend on the loss draws' outcomes.
    public mutating func next(using rng: inout SplitMix64) -> (lost: Bool, state: State) {
        let judged = state
        let received = judged == .good ? parameters.k : parameters.h
        let lost = rng.unitInterval() >= received
        let step = rng.unitInterval()
        switch state {
        case .good: if step < parameters.p { state = .bad }
        case .bad: if step < parameters.r { state = .good }
        }
        return (lost, judged)
    }
}

extension SplitMix64 {
    /// A uniform double in [0, 1) from the top 53 bits.
    public mutating func unitInterval() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }

    /// The generator of one direction, so that each direction's choices depend only on the seed and
    /// that direction's own traffic.
    public static func forDirection(_ direction: Direction, seed: UInt64) -> SplitMix64 {
        // Distinct odd constants; SplitMix64's output function decorrelates neighbouring seeds.
        SplitMix64(seed: seed ^ (direction == .up ? 0x5550_0000_0000_0001 : 0x444F_574E_0000_0003))
    }
}
