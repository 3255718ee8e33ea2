public import Results

extension ScanReport {
    public struct MergeError: Error, CustomStringConvertible, Sendable {
        public let reason: String
        public var description: String { reason }
    }

    /// Scans from several vantage points as one report: every pair keeps the vantage it was measured
    /// from, the synced MTU and every engine's figures are recomputed over all accepted pairs, and
    /// `mergedFrom` lists the inputs.
    public static func merged(_ scans: [ScanReport], run: RunInfo) throws(MergeError) -> ScanReport {
        guard let first = scans.first else { throw MergeError(reason: "nothing to merge") }
        guard scans.count >= 2 else { throw MergeError(reason: "merge needs at least two scans") }
        var pairs: [ScanPair] = []
        var listIssues: [String] = []
        var domains: [String] = []
        var resolvers = 0, notTested = 0, queries = 0
        var duration = 0.0
        var sources: [RunInfo] = []
        for s in scans {
            // A merged input already carries vantages per pair; a plain scan gets its run's vantage.
            pairs += s.pairs.map { p in
                var p = p
                if p.vantage == nil { p.vantage = s.run.vantage }
                return p
            }
            listIssues += s.input.listIssues.map { "\(s.run.vantage): \($0)" }
            for d in s.settings.domains where !domains.contains(d) { domains.append(d) }
            resolvers += s.input.resolvers
            notTested += s.summary.notTested
            queries += s.summary.queries
            duration = max(duration, s.summary.durationSeconds)
            sources += s.mergedFrom ?? [s.run]
        }
        let synced = SyncedMTU.synced(pairs)
        var settings = first.settings
        settings.domains = domains
        // The engine figures over the pairs of every input, for the engines any input was asked about.
        var engines: [Engine] = []
        for s in scans { for e in s.engines?.map(\.engine) ?? [] where !engines.contains(e) { engines.append(e) } }
        settings.engines = engines.isEmpty ? nil : engines.map(\.rawValue)
        var merged = ScanReport(
            run: run, settings: settings, input: InputSummary(resolvers: resolvers, listIssues: listIssues), pairs: pairs,
            synced: synced, optimized: nil,
            summary: Summary(of: pairs, notTested: notTested, queries: queries, durationSeconds: duration),
            engines: engines.isEmpty ? nil : EngineScan.all(engines, pairs: pairs))
        merged.mergedFrom = sources
        return merged
    }
}
