public import Base
/// Gilbert-model parameters fitted to a binary loss trace (true = lost), as docs/MEASUREMENT.md defines.
///
/// Two states, Good and Bad; p = P(Good -> Bad), r = P(Bad -> Good). Convention for h here:
/// h = P(received | Bad), so a packet in Bad is lost with probability 1 - h; Good never loses.
/// - `twoState` (simple Gilbert, h = 0): p = n01 / n0, r = n10 / n1 from the transition counts.
/// - `withH` (Gilbert): from a = P(1), b = P(1 | 1), c = P(111) / (P(101) + P(111)):
///   1 - r = (ac - b^2) / (2ac - b(a + c)), h = 1 - b / (1 - r), p = a r / (1 - h - a).
public struct GilbertFit: Codable, Sendable, Hashable {
    public static let hConvention = "h = P(received | Bad state); a packet in Bad is lost with probability 1 - h, Good never loses"

    public struct TwoState: Codable, Sendable, Hashable {
        public var p: Double
        public var r: Double
        /// Stationary loss p / (p + r).
        public var loss: Double
        /// Mean burst length in packets, 1 / r.
        public var meanBurst: Double
    }

    public struct WithH: Codable, Sendable, Hashable {
        public var p: Double
        public var r: Double
        public var h: Double
    }

    public var samples: Int
    @NullCoded public var twoState: TwoState?
    @NullCoded public var twoStateReason: String?
    @NullCoded public var withH: WithH?
    @NullCoded public var withHReason: String?

    /// Enough transitions out of each state for a rate to mean something.
    public static let minimumTransitions = 5

    public init(lostFlags x: [Bool]) {
        self.init(counts: LossRunCounts(x))
    }

    /// The same fit from counts kept on the fly (the simulator's replayed channel).
    public init(counts: LossRunCounts) {
        samples = counts.samples
        let (n0, n1, n01, n10, n11, n101, n111, ones) =
            (counts.n0, counts.n1, counts.n01, counts.n10, counts.n11, counts.n101, counts.n111, counts.lost)
        if n0 == 0 || n1 == 0 || n01 < Self.minimumTransitions || n10 < Self.minimumTransitions {
            twoStateReason = "too few transitions to fit (\(n01) good->lost, \(n10) lost->good; need \(Self.minimumTransitions) each)"
        } else {
            let p = Double(n01) / Double(n0)
            let r = Double(n10) / Double(n1)
            twoState = TwoState(p: p, r: r, loss: p / (p + r), meanBurst: 1 / r)
        }
        guard n1 > 0, n101 + n111 > 0, twoStateReason == nil else {
            withHReason = twoStateReason ?? "no lost-?-lost triples to fit c"
            return
        }
        let a = Double(ones) / Double(samples)
        let b = Double(n11) / Double(n1)
        let c = Double(n111) / Double(n101 + n111)
        let denominator = 2 * a * c - b * (a + c)
        guard denominator != 0 else {
            withHReason = "degenerate trace (2ac = b(a + c))"
            return
        }
        let oneMinusR = (a * c - b * b) / denominator
        let r = 1 - oneMinusR
        guard oneMinusR > 0, r > 0, r <= 1 else {
            withHReason = "fit outside the model (1 - r = \(oneMinusR)): losses look independent, use twoState"
            return
        }
        let h = 1 - b / oneMinusR
        guard h >= 0, h < 1, 1 - h - a > 0 else {
            withHReason = "fit outside the model (h = \(h))"
            return
        }
        let p = a * r / (1 - h - a)
        guard p > 0, p <= 1 else {
            withHReason = "fit outside the model (p = \(p))"
            return
        }
        withH = WithH(p: p, r: r, h: h)
    }
}

