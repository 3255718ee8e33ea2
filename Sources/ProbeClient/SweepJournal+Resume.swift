public import Results

extension SweepJournal.State {
    /// A setting of `--resume` that differs from the interrupted sweep's. Each fixes which addresses
    /// the sweep probes and in what order, so going on with another would probe some twice and miss others.
    public enum ResumeMismatch: Sendable, Hashable {
        case ranges
        case seed(given: UInt64, sweep: UInt64)
        case sample, shard, passes, neighbourPrefix
    }

    /// The first setting of the run asked for that differs from this interrupted sweep's; nil when the
    /// sweep can go on. A `seed` of nil takes the sweep's own.
    public func resumeMismatch(rangesDigest: String, seed: UInt64?, sample: UInt64?, shard: SweepShard, passes: Int,
                               neighbourPrefix: Int?) -> ResumeMismatch? {
        guard self.rangesDigest == rangesDigest else { return .ranges }
        if let seed, seed != self.seed { return .seed(given: seed, sweep: self.seed) }
        if sample != self.sample { return .sample }
        if (self.shard ?? .whole) != shard { return .shard }
        if (self.passes ?? 1) != passes { return .passes }
        if self.neighbourPrefix != neighbourPrefix { return .neighbourPrefix }
        return nil
    }

    /// A new sweep's state, at its first pass with nothing sent.
    public static func start(seed: UInt64, salt: UInt16, rangesDigest: String, rangesTotal: UInt64, sample: UInt64?,
                             passes: Int, shard: SweepShard, neighbourPrefix: Int?) -> Self {
        var state = Self(seed: seed, salt: salt, rangesDigest: rangesDigest, rangesTotal: rangesTotal, sample: sample,
                         checkpoint: SweepCheckpoint(), runs: 1)
        state.passes = passes
        state.pass = 1
        state.shard = shard
        state.neighbourPrefix = neighbourPrefix
        return state
    }
}

extension ScanResult {
    /// A sweep's MTU scans as `scan` reports them: the pairs not tested are the answering addresses
    /// times the domains, less the pairs measured; none when the sweep measured nothing (`--sweep-only`).
    public static func swept(pairs: [ScanPair], answering: Int, domains: Int, measured: Bool, interrupted: Bool) -> ScanResult {
        let measuredPairs = Set(pairs.map { "\($0.resolver) \($0.domain)" })
        let notTested = measured ? answering * domains - measuredPairs.count : 0
        return .measured(pairs: pairs, notTested: max(0, notTested), queries: pairs.reduce(0) { $0 + $1.queries }, interrupted: interrupted)
    }
}
