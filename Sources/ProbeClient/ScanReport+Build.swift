public import EngineModels
public import Results

extension ScanReport {
    /// `scan.json` from what the scan measured: the settings it ran with, the pairs, the synced MTU, the
    /// optimizer's view and every engine's figures.
    /// `models`, when given, replace the default model of each engine (a MasterDnsVPN server's own
    /// encryption method and answer encoding).
    public static func build(run: RunInfo, configuration c: ScanConfiguration, list: ResolverList, result: ScanResult,
                             duration: Double, engines: [Engine], models: [any EngineModel]? = nil) -> ScanReport {
        let settings = ScanSettings(
            domains: c.domains.map(\.description), encoding: c.encoding.rawValue, recordType: c.recordType.description,
            timeoutMs: Int(c.timeout.nanoseconds / 1_000_000), attempts: c.attempts, concurrency: c.concurrency,
            perResolverQPS: c.perResolverQPS, confirmProbes: c.confirmProbes, minValid: c.minValid,
            uploadCharacters: .init(min: c.uploadCharacters.lowerBound, max: c.uploadCharacters.upperBound),
            downloadBytes: .init(min: c.downloadBytes.lowerBound, max: c.downloadBytes.upperBound),
            ednsSize: 4096, maxLoss: c.maxLoss)
        let summary = Summary(of: result.pairs, notTested: result.notTested, queries: result.queries, durationSeconds: duration)
        var report = ScanReport(run: run, settings: settings,
                                input: InputSummary(resolvers: c.resolvers.count, listIssues: list.issues.map(\.description)),
                                pairs: result.pairs, synced: SyncedMTU.synced(result.pairs),
                                optimized: SyncedMTU.optimize(result.pairs), summary: summary,
                                engines: models.map { $0.map { EngineScan(model: $0, pairs: result.pairs) } }
                                    ?? EngineScan.all(engines, pairs: result.pairs))
        report.settings.recordTypes = c.recordTypes.map(\.description)
        report.settings.engines = engines.map(\.rawValue)
        report.congestion = result.congestion
        return report
    }
}
