public import Base

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
/// with a loss probability per state (`GilbertElliottParameters` says what p, r, h and k mean; the
/// path report's Gilbert fit uses the same conventions).
/// The chain starts in Good. For each datagram the state in force decides its fate, then the chain
/// steps: the first datagram is judged in Good.
public struct GilbertElliott: Sendable, Hashable {
    public enum State: String, Sendable, Hashable {
        case good, bad
    }

    public let parameters: GilbertElliottParameters
    public private(set) var state: State = .good

    public init(_ parameters: GilbertElliottParameters) { self.parameters = parameters }

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
    /// The generator of one direction, so that each direction's choices depend only on the seed and
    /// that direction's own traffic.
    public static func forDirection(_ direction: Direction, seed: UInt64) -> SplitMix64 {
        // Distinct odd constants; SplitMix64's output function decorrelates neighbouring seeds.
        SplitMix64(seed: seed ^ (direction == .up ? 0x5550_0000_0000_0001 : 0x444F_574E_0000_0003))
    }
}
