/// The values one engine configuration can use across all usable pairs: what MasterDnsVPN calls the
/// synced MTU (the minimum over accepted resolvers), and what a single server flag must satisfy
/// for dnstt.
public struct SyncedFigures: Sendable, Hashable, Codable {
    public var engine: Engine
    /// Minimum upload value over the usable pairs; nil when none is usable.
    public var upload: Int?
    /// Minimum download value over the usable pairs, each recomputed with the synced upload
    /// (MasterDnsVPN pads its download probe to the upload size); nil when none is usable.
    public var download: Int?
    /// The pairs that carry the engine in both directions, in input order.
    public var usable: [PairFigures]
    /// The pairs that do not.
    public var rejected: [PairFigures]

    public init(engine: Engine, upload: Int?, download: Int?, usable: [PairFigures], rejected: [PairFigures]) {
        self.engine = engine
        self.upload = upload
        self.download = download
        self.usable = usable
        self.rejected = rejected
    }
}
