public import Base
public import Fates

/// The impairments of one direction as a pure state machine: `decide` takes a datagram's
/// arrival time and what it carries and returns its fate. No sockets and no clock: the relay and
/// the tests drive it the same way, and equal seeds and inputs give equal verdicts.
///
/// Stages, in order (each draws from this direction's generator only when it is configured and
/// the datagram reaches it):
/// 1. `--X-max-qname`, 2. `--X-max-size` (drop or truncate), 3. loss (Bernoulli, Gilbert-Elliott
/// or the replayed fate), 4. `--servfail` (queries only), 5. duplication (or the replayed copies),
/// 6. the rate shaper, 7. delay + jitter (or the replayed delay), 8. reordering.
public struct DirectionImpairment: Sendable {
    public let direction: Direction
    public let config: DirectionConfig
    private var rng: SplitMix64
    private var bernoulli: BernoulliLoss?
    private var ge: GilbertElliott?
    private var delay: DelayModel
    private var duplication: Duplication
    private var rateLimiter: RateLimiter?
    private var replay: FateReplay?
    private let servfail: Double

    public init(direction: Direction, config: DirectionConfig, seed: UInt64, servfail: Double = 0, replay: FateStream? = nil) {
        self.direction = direction
        self.config = config
        self.rng = .forDirection(direction, seed: seed)
        switch config.loss {
        case .bernoulli(let p): bernoulli = BernoulliLoss(probability: p)
        case .gilbertElliott(let parameters): ge = GilbertElliott(parameters)
        case nil: break
        }
        delay = DelayModel(delayMs: config.delayMs, jitterMs: config.jitterMs)
        duplication = Duplication(probability: config.duplicate)
        rateLimiter = config.rate.map { RateLimiter(ratePerSecond: $0, burst: config.rateBurst, queueLimit: config.rateQueue) }
        self.replay = replay.flatMap(FateReplay.init(stream:))
        self.servfail = direction == .up ? servfail : 0
    }

    /// Decides the fate of a datagram that arrived at `nowNs` (relay clock).
    public mutating func decide(_ info: DatagramInfo, nowNs: UInt64) -> Verdict {
        var verdict = Verdict(action: .forward, departureNs: nowNs)
        func drop(_ model: Verdict.Model) -> Verdict {
            verdict.action = .drop
            verdict.droppedBy = model
            verdict.copies = 0
            return verdict
        }
        // 1-2: deterministic filters.
        if let limit = config.maxQName, let length = info.qnameLength, length > limit { return drop(.qname) }
        if let limit = config.maxSize, info.size > limit {
            // A datagram that is not DNS cannot be truncated the way a resolver does: dropped.
            guard config.oversize == .truncate, info.isDNS else { return drop(.size) }
            verdict.truncated = true
        }
        // 3: loss.
        var replayed: PacketFate?
        if var r = replay {
            let step = r.next()
            replay = r
            verdict.replayIndex = step.index
            verdict.replayWrapped = step.wrapped
            if !step.fate.delivered { return drop(.replay) }
            replayed = step.fate
        } else if let bernoulli {
            if bernoulli.isLost(using: &rng) { return drop(.loss) }
        } else if var model = ge {
            let (lost, state) = model.next(using: &rng)
            ge = model
            verdict.geState = state
            if lost { return drop(.ge) }
        }
        // 4: SERVFAIL from the relay, for queries that made it this far.
        if servfail > 0, info.isDNS, !info.isResponse, rng.unitInterval() < servfail {
            verdict.action = .servfail
            verdict.copies = 0
            return verdict
        }
        // 5: copies.
        verdict.copies = replayed.map { $0.copies ?? 1 } ?? duplication.copies(using: &rng)
        // 6: shaper.
        var ready = nowNs
        if var shaper = rateLimiter {
            guard let departure = shaper.admit(nowNs: nowNs) else {
                rateLimiter = shaper
                if config.rateExcess == .refuse, info.isDNS, !info.isResponse {
                    verdict.action = .refused
                    verdict.copies = 0
                    return verdict
                }
                return drop(.rate)
            }
            rateLimiter = shaper
            verdict.queueNs = departure - nowNs
            ready = departure
        }
        // 7: delay.
        if let fate = replayed {
            ready += UInt64(((fate.delayMs ?? 0) * 1e6).rounded())
        } else if delay.isActive {
            ready = delay.departure(readyNs: ready, using: &rng)
        }
        verdict.departureNs = ready
        // 8: reordering.
        if replayed == nil, let reorder = config.reorder {
            verdict.reorderGap = reorder.hold(using: &rng)
        }
        return verdict
    }
}
