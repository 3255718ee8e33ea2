public import Results

extension ScanServerProbing {
    /// The probing facts with the engine model's check of the sizes that arrived: `model` applied to each
    /// usable pair's measurement against what the server answered.
    public init(edition: String, encryptionMethod: Int, encryptionName: String, baseEncodeData: Bool,
                authentication: String, wireExposure: String, pairs: [ScanPair], model: any EngineModel) {
        var agreeing = 0
        var disagreeing: [String] = []
        let usable = pairs.filter(\.usable)
        for pair in usable {
            let figures = model.figures(for: pair.measurement)
            let measured = (pair.upload?.bytes, pair.download?.bytes)
            if figures.upload.value == measured.0, figures.download.value == measured.1 {
                agreeing += 1
            } else {
                func text(_ v: Int?) -> String { v.map(String.init) ?? "-" }
                disagreeing.append("\(pair.resolver) \(pair.domain): measured \(text(measured.0))/\(text(measured.1)), model \(text(figures.upload.value))/\(text(figures.download.value))")
            }
        }
        self.init(edition: edition, encryptionMethod: encryptionMethod, encryptionName: encryptionName,
                  baseEncodeData: baseEncodeData, authentication: authentication, wireExposure: wireExposure,
                  modelCheck: ModelCheck(pairs: usable.count, agreeing: agreeing, disagreeing: disagreeing))
    }
}
