public import Results

extension ScanPair {
    /// What the probes measured for this pair, as the engine models read it: the longest intact
    /// query name, the largest intact response per record type, and the EDNS size the resolver
    /// advertised upstream. A download whose largest tried size passed (nothing bound it, or only
    /// what the record type can carry under this domain) is a lower bound on what the resolver
    /// carries.
    public var measurement: PairMeasurement {
        var responses: [RecordType: ResponseMeasurement] = [:]
        for d in downloads ?? (download.map { [$0] } ?? []) {
            guard let type = RecordType(name: d.recordType), d.responseSize > 0 else { continue }
            let open = d.limitedBy == nil || d.limitedBy == .recordType
            responses[type] = ResponseMeasurement(bytes: d.responseSize, isLowerBound: open)
        }
        return PairMeasurement(resolver: resolver, domain: domain, longestName: upload?.qnameChars, responses: responses,
                               upstreamEDNS: download?.upstreamEDNS)
    }
}

extension EngineScan {
    /// One engine's figures over a scan: every usable pair in that engine's units and the values one
    /// configuration of it can use (`EngineModel.synced`).
    public init(model: any EngineModel, pairs: [ScanPair]) {
        let synced = model.synced(pairs.filter(\.usable).map(\.measurement))
        self.init(engine: model.engine, name: model.engine.displayName, source: model.citation, synced: synced,
                  exports: model.exports(synced))
    }

    /// Figures for every engine in `engines` over `pairs` (the pairs the exports may take: accepted and
    /// within the loss threshold).
    public static func all(_ engines: [Engine], pairs: [ScanPair]) -> [EngineScan] {
        engines.map { EngineScan(model: EngineCatalog.model(for: $0), pairs: pairs) }
    }
}
