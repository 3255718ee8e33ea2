public import Base
/// The per-packet fates of one stream of a trace, ready for replay: times relative to the first packet,
/// a delay for every delivered packet.
public struct TraceFates: Sendable {
    public let sentMs: ContiguousArray<Double>
    public let delivered: ContiguousArray<Bool>
    public let delayMs: ContiguousArray<Double>
    /// One pass of the trace in ms: first to last send plus one mean gap, so a wrapped replay keeps
    /// the trace's rate.
    public let periodMs: Double
    /// Delivered packets whose delay was not measured and got the stream's median delay instead.
    public let delaysFilled: Int

    public var count: Int { sentMs.count }

    /// `delayScale` 0.5 turns round-trip delays into one-way ones (feedback riding a round-trip stream).
    public init(packets: [(sentMs: Double, delivered: Bool, delayMs: Double?)], delayScale: Double = 1) throws(TextFormError) {
        guard let first = packets.first else { throw TextFormError("a fates stream has no packets") }
        let measured = packets.compactMap(\.delayMs).sorted()
        let filled = packets.filter { $0.delivered && $0.delayMs == nil }.count
        if filled > 0 && measured.isEmpty {
            throw TextFormError("the fates stream has delivered packets but no delayMs at all; simulate needs delays")
        }
        let median = measured.isEmpty ? 0 : measured[measured.count / 2]
        var sent = ContiguousArray<Double>()
        var ok = ContiguousArray<Bool>()
        var delay = ContiguousArray<Double>()
        sent.reserveCapacity(packets.count)
        ok.reserveCapacity(packets.count)
        delay.reserveCapacity(packets.count)
        for p in packets {
            sent.append(p.sentMs - first.sentMs)
            ok.append(p.delivered)
            delay.append(p.delivered ? (p.delayMs ?? median) * delayScale : 0)
        }
        let span = sent.last!
        let gap = packets.count > 1 ? span / Double(packets.count - 1) : 1
        sentMs = sent
        delivered = ok
        delayMs = delay
        periodMs = span + (gap > 0 ? gap : 1)
        delaysFilled = filled
    }

    public var lossRate: Double { Double(delivered.lazy.filter { !$0 }.count) / Double(max(count, 1)) }
}

/// The channel one direction offers: a sequence of opportunities, each a time at which one datagram can
/// be sent and the fate that datagram meets (delivered after a delay, or lost).
///
/// From a trace, opportunities are the trace's own send times in order, starting at an offset and
/// wrapping around (each pass shifted by the trace's period). From a model, they come at a fixed rate
/// with seeded fates. Opportunities nobody uses pass by; a packet always takes the next one at or after
/// the moment it is ready.
public struct Channel: Sendable {
    private enum Kind: Sendable { case trace, bernoulli, ge }

    private let kind: Kind
    // Trace replay.
    private let sentMs: ContiguousArray<Double>
    private let delivered: ContiguousArray<Bool>
    private let delaysMs: ContiguousArray<Double>
    private let periodMs: Double
    private var cursor = 0
    private var origin = 0.0
    private var cycleBase = 0.0
    // Models.
    private var rng: SplitMix64
    private var bad = false
    private let intervalMs: Double
    private let p: Double, r: Double, h: Double, k: Double, modelDelayMs: Double

    /// Opportunities passed so far (used or not).
    public private(set) var passed = 0
    /// Opportunities that carried a datagram.
    public private(set) var used = 0
    /// The fates the sender's datagrams met, in the order they met them: what the channel really did.
    public private(set) var replayed = LossRunCounts()
    /// Time of the next opportunity (ms since the start of the run).
    public private(set) var nextTimeMs = 0.0

    public init(trace: TraceFates, offset: Int) {
        kind = .trace
        sentMs = trace.sentMs
        delivered = trace.delivered
        delaysMs = trace.delayMs
        periodMs = trace.periodMs
        rng = SplitMix64(seed: 0)
        intervalMs = 0
        (p, r, h, k, modelDelayMs) = (0, 0, 0, 1, 0)
        cursor = ((offset % trace.count) + trace.count) % trace.count
        origin = trace.sentMs[cursor]
    }

    public init(model: LossModel, seed: UInt64) {
        sentMs = []
        delivered = []
        delaysMs = []
        periodMs = 0
        rng = SplitMix64(seed: seed)
        intervalMs = 1000 / model.opportunitiesPerSecond
        modelDelayMs = model.delayMs
        switch model.process {
        case let .bernoulli(loss):
            kind = .bernoulli
            (p, r, h, k) = (loss, 1, 0, 1)
        case let .gilbertElliott(ge):
            kind = .ge
            (p, r, h, k) = (ge.p, ge.r, ge.h, ge.k)
        }
        // Start Gilbert-Elliott in its stationary distribution.
        if kind == .ge, p + r > 0 {
            bad = rng.unitInterval() < p / (p + r)
        }
    }

    /// The time of the opportunity `count` places after the next one, without taking any.
    public func timeOfOpportunity(after count: Int) -> Double {
        if kind != .trace { return nextTimeMs + Double(count) * intervalMs }
        let absolute = cursor + count
        return cycleBase + Double(absolute / sentMs.count) * periodMs + sentMs[absolute % sentMs.count] - origin
    }

    /// Takes the next opportunity: its time and fate (the delay is meaningful only when delivered).
    @inline(__always)
    public mutating func take() -> (timeMs: Double, delivered: Bool, delayMs: Double) {
        used += 1
        let fate = advance()
        replayed.record(lost: !fate.delivered)
        return fate
    }

    /// Ends the replayed sequence (closes an open loss period).
    public mutating func finishReplay() { replayed.finish() }

    /// Opportunities per second: the model's rate, or the trace's packets per period.
    public var opportunitiesPerSecond: Double {
        kind == .trace ? Double(sentMs.count) / (periodMs / 1000) : 1000 / intervalMs
    }

    /// Lets every opportunity before `timeMs` pass unused.
    @inline(__always)
    public mutating func skip(before timeMs: Double) {
        while nextTimeMs < timeMs { _ = advance() }
    }

    @inline(__always)
    private mutating func advance() -> (timeMs: Double, delivered: Bool, delayMs: Double) {
        let time = nextTimeMs
        passed += 1
        switch kind {
        case .bernoulli:
            nextTimeMs = Double(passed) * intervalMs
            return (time, rng.unitInterval() >= p, modelDelayMs)
        case .ge:
            nextTimeMs = Double(passed) * intervalMs
            // Good delivers everything when k = 1 (no draw, so Gilbert's model keeps its sequence).
            let ok = bad ? rng.unitInterval() < h : (k < 1 ? rng.unitInterval() < k : true)
            // The chain moves once per packet slot, after the packet.
            bad = bad ? !(rng.unitInterval() < r) : rng.unitInterval() < p
            return (time, ok, modelDelayMs)
        case .trace:
            let ok = delivered[cursor]
            let delay = delaysMs[cursor]
            cursor += 1
            if cursor == sentMs.count {
                cursor = 0
                cycleBase += periodMs
            }
            nextTimeMs = cycleBase + sentMs[cursor] - origin
            return (time, ok, delay)
        }
    }
}
