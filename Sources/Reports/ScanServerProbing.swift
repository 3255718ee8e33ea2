public import EngineModels
public import ProbeClient

/// `scan --server masterdnsvpn`: the probes were MasterDnsVPN's own MTU-test requests, sent to the
/// user's own server, so each pair's `upload.bytes` and `download.bytes` are the engine's MTUs as
/// its client would find them, measured, not modelled.
public struct ScanServerProbing: Codable, Sendable, Hashable {
    /// "masterdnsvpn".
    public var server: String
    /// "go": the edition whose requests were spoken.
    public var edition: String
    /// DATA_ENCRYPTION_METHOD and its name.
    public var encryptionMethod: Int
    public var encryptionName: String
    /// BASE_ENCODE_DATA: the replies were asked in base64.
    public var baseEncodeData: Bool
    /// Always false: the server's replies carry no MAC.
    public var authenticated: Bool
    public var authentication: String
    /// What the requests show on the wire with this method.
    public var wireExposure: String
    /// The engine model applied to the sizes that arrived (the longest name, the largest answer)
    /// against what the server answered: usable pairs whose figures agree, and those that do not.
    public var modelCheck: ModelCheck

    public struct ModelCheck: Codable, Sendable, Hashable {
        public var pairs: Int
        public var agreeing: Int
        /// "198.18.0.1:53: measured 113/500, model 113/499".
        public var disagreeing: [String]
    }

    public init(edition: String, encryptionMethod: Int, encryptionName: String, baseEncodeData: Bool,
                authentication: String, wireExposure: String, pairs: [ScanPair], model: any EngineModel) {
        server = "masterdnsvpn"
        self.edition = edition
        self.encryptionMethod = encryptionMethod
        self.encryptionName = encryptionName
        self.baseEncodeData = baseEncodeData
        authenticated = false
        self.authentication = authentication
        self.wireExposure = wireExposure
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
        modelCheck = ModelCheck(pairs: usable.count, agreeing: agreeing, disagreeing: disagreeing)
    }

    /// Lines for scan.md.
    public func markdown() -> [String] {
        var out = ["## Probed against your MasterDnsVPN server", ""]
        out.append("- The probes were MasterDnsVPN's own MTU-test requests (\(edition == "go" ? "Go" : edition) edition, encryption method \(encryptionMethod) \(encryptionName)\(baseEncodeData ? ", base64 replies" : "")), sent to your server through each resolver: `up bytes` and `down bytes` below are MIN/MAX_UPLOAD_MTU and MIN/MAX_DOWNLOAD_MTU as the engine's client finds them.")
        out.append("- **Not authenticated:** \(authentication).")
        out.append("- On the wire: \(wireExposure).")
        out.append("- The engine model from the sizes that arrived gives the same figures for \(modelCheck.agreeing) of \(modelCheck.pairs) usable pair(s)" + (modelCheck.disagreeing.isEmpty ? "." : ":"))
        for line in modelCheck.disagreeing { out.append("  - \(line)") }
        out.append("")
        return out
    }
}
