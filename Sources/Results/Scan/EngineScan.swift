/// One engine's figures over a scan: every usable pair in that engine's units and the values one
/// configuration of it can use (`EngineModel.synced`; computed in EngineModels, `EngineScan(model:pairs:)`).
public struct EngineScan: Sendable, Hashable, Codable {
    public var engine: Engine
    public var name: String
    /// The engine source (repository, commit, files) the model's facts come from.
    public var source: SourceCitation
    public var synced: SyncedFigures
    /// The texts the engine reads, written under `exports/<engine>/` in the report directory.
    public var exports: [ExportFile]

    public init(engine: Engine, name: String, source: SourceCitation, synced: SyncedFigures, exports: [ExportFile]) {
        self.engine = engine
        self.name = name
        self.source = source
        self.synced = synced
        self.exports = exports
    }
}
