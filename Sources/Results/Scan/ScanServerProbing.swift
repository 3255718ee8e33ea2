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

        public init(pairs: Int, agreeing: Int, disagreeing: [String]) {
            self.pairs = pairs
            self.agreeing = agreeing
            self.disagreeing = disagreeing
        }
    }

    public init(edition: String, encryptionMethod: Int, encryptionName: String, baseEncodeData: Bool,
                authentication: String, wireExposure: String, modelCheck: ModelCheck) {
        server = "masterdnsvpn"
        self.edition = edition
        self.encryptionMethod = encryptionMethod
        self.encryptionName = encryptionName
        self.baseEncodeData = baseEncodeData
        authenticated = false
        self.authentication = authentication
        self.wireExposure = wireExposure
        self.modelCheck = modelCheck
    }
}
