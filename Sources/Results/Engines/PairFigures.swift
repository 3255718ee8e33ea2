/// One engine's figures for one resolver-domain pair.
public struct PairFigures: Sendable, Hashable, Codable {
    public var engine: Engine
    public var resolver: String
    public var domain: String
    public var upload: DirectionFigure
    public var download: DirectionFigure

    /// Both directions carry the engine.
    public var usable: Bool { upload.usable && download.usable }

    public init(engine: Engine, resolver: String, domain: String, upload: DirectionFigure, download: DirectionFigure) {
        self.engine = engine
        self.resolver = resolver
        self.domain = domain
        self.upload = upload
        self.download = download
    }
}
