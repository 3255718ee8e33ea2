public import Base
public import Results
public import DNSWire

extension ScanPair {
    /// The resolver the pair names, with its transport (`tls://…`, `https://…/dns-query`,
    /// `tcp://…`, or a UDP address); nil when the name is not a resolver address.
    public var resolverTarget: ResolverTarget? {
        if let target = try? ResolverTarget(parsing: resolver) { return target }
        return (try? Endpoint(parsing: resolver, defaultPort: 53)).map { ResolverTarget(endpoint: $0) }
    }

    /// Whether `--only ENTRY` names this pair's resolver: its name as the scan wrote it, the same
    /// with `:53`, or the same address and port whatever the transport.
    public func named(by entry: String) -> Bool {
        if resolver == entry || resolver == entry + ":53" { return true }
        guard let mine = resolverTarget, let theirs = try? ResolverTarget(parsing: entry) else { return false }
        return mine.endpoint == theirs.endpoint
    }
}

/// One pair `rank` measures: where its queries go, over which transport, and their shape (the
/// scan's upload and download MTU for the pair: a tunnel's full-size frames).
public struct RankTarget: Sendable, Hashable {
    public var target: ResolverTarget
    public var zone: DNSName
    public var queryCharacters: Int
    public var answerBytes: Int

    public init(target: ResolverTarget, zone: DNSName, queryCharacters: Int, answerBytes: Int) {
        self.target = target
        self.zone = zone
        self.queryCharacters = queryCharacters
        self.answerBytes = answerBytes
    }

    /// The accepted pairs of a scan that `rank` can measure (both MTUs found, loss not exceeded),
    /// limited to `only` when it is not empty, in the scan's order. Over every transport.
    public static func measurable(_ pairs: [ScanPair], only: [String] = []) -> [RankTarget] {
        pairs.compactMap { p in
            guard p.accepted, p.lossExceeded != true, let chars = p.upload?.payloadChars, let bytes = p.download?.bytes,
                  only.isEmpty || only.contains(where: p.named(by:)),
                  let target = p.resolverTarget, let zone = try? DNSName(p.domain) else { return nil }
            return RankTarget(target: target, zone: zone, queryCharacters: chars, answerBytes: bytes)
        }
    }
}

/// The stream resolvers among `targets`, by the endpoint `Prober.targets` keys them by.
public func streamTargets(_ targets: some Sequence<ResolverTarget>) -> [Endpoint: ResolverTarget] {
    var out: [Endpoint: ResolverTarget] = [:]
    for t in targets where t.transport.isStream { out[t.endpoint] = t }
    return out
}

/// `rank`'s measurement: every pair's knee (`CapacityProbe`), several pairs at once, within the
/// run's time budget, over each pair's own transport (UDP through the query engine; TCP, TLS and
/// HTTPS through `prober.transports`, pipelined on at most `connectionsPerResolver` connections).
public struct RankRun: Sendable {
    public let probe: CapacityProbe

    public init(probe: CapacityProbe) {
        self.probe = probe
    }

    /// Measures `pairs` in `order` (indices into `pairs`), `settings.parallel` at once; a pair
    /// left out (budget spent, or stopped before its first step) has no entry.
    public func measure(_ pairs: [RankTarget], order: [Int]) async -> [Int: PairCapacity] {
        let settings = probe.settings
        let clock = ContinuousClock()
        let started = clock.now
        return await Self.schedule(order: order, parallel: settings.parallel, pairBudgetSeconds: settings.pairBudgetSeconds,
                                   totalBudgetSeconds: settings.totalBudgetSeconds,
                                   elapsedSeconds: { Double((clock.now - started).components.seconds) }) { index, budget in
            let c = await measure(pairs[index], budgetSeconds: budget)
            return Task.isCancelled && c.steps.isEmpty ? nil : c
        }
    }

    /// The order `rank` measures `count` pairs in: a permutation seeded by the run's seed, so that
    /// no resolver is always first (or always last, when the budget runs out).
    public static func order(count: Int, seed: UInt64) -> [Int] {
        var rng = SplitMix64(seed: seed)
        return (0..<count).shuffled(using: &rng)
    }

    /// The scheduler: `measure(index, budget)` for each index of `order` in turn, `parallel` at once,
    /// each with the smaller of `pairBudgetSeconds` and what `elapsedSeconds` leaves of
    /// `totalBudgetSeconds`; none starts once the total budget is spent or the task is cancelled.
    /// A nil measurement has no entry.
    static func schedule<Measured: Sendable>(order: [Int], parallel: Int, pairBudgetSeconds: Double, totalBudgetSeconds: Double,
                                             elapsedSeconds: @escaping @Sendable () -> Double,
                                             measure: @escaping @Sendable (Int, Double) async -> Measured?) async -> [Int: Measured] {
        var results: [Int: Measured] = [:]
        await withTaskGroup(of: (Int, Measured?).self) { group in
            var next = order.makeIterator()
            func launch() -> Bool {
                guard let index = next.next() else { return false }
                let left = totalBudgetSeconds - elapsedSeconds()
                guard left > 0, !Task.isCancelled else { return false }
                let budget = min(pairBudgetSeconds, left)
                group.addTask { (index, await measure(index, budget)) }
                return true
            }
            for _ in 0..<parallel where launch() {}
            while let (index, measured) = await group.next() {
                if let measured { results[index] = measured }
                _ = launch()
            }
        }
        return results
    }

    /// One pair's knee. Over a stream transport one query first opens the connection (its RTT is
    /// `firstQueryMs`), so the steps measure the resolver on open connections, and the connections
    /// set up and failed meanwhile are counted.
    public func measure(_ pair: RankTarget, budgetSeconds: Double) async -> PairCapacity {
        let prober = probe.prober
        let endpoint = pair.target.endpoint
        let stream = pair.target.transport.isStream
        let before = stream ? prober.transports?.connections(of: endpoint) : nil
        var firstQueryMs: Double?
        if stream {
            let first = await prober.download(endpoint, zone: pair.zone, bytes: pair.answerBytes, type: .txt,
                                              queryCharacters: pair.queryCharacters)
            firstQueryMs = first.ok ? first.rttNanos.map { Double($0) / 1e6 } : nil
        }
        var c = await probe.measure(resolver: endpoint, zone: pair.zone, queryCharacters: pair.queryCharacters,
                                    answerBytes: pair.answerBytes, budgetSeconds: budgetSeconds)
        c.resolver = pair.target.description
        c.transport = pair.target.transport
        if stream {
            c.firstQueryMs = firstQueryMs
            if let before, let after = prober.transports?.connections(of: endpoint) { c.connections = after.since(before) }
        }
        return c
    }
}
