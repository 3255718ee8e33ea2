/// Facts every report carries about its run.
public struct RunInfo: Codable, Sendable, Hashable {
    public var id: String
    public var tool: String
    public var version: String
    public var commandLine: [String]
    /// Where the measurement was taken from (hostname or `--vantage`).
    public var vantage: String
    public var seed: UInt64
    public var startedAt: String
    public var finishedAt: String?
    /// False when the run was interrupted; the report then holds what was measured before.
    public var complete: Bool
    public var interruption: String?

    public init(id: String, tool: String = "tunnelprobe", version: String, commandLine: [String], vantage: String,
                seed: UInt64, startedAt: String, finishedAt: String? = nil, complete: Bool = true, interruption: String? = nil) {
        self.id = id
        self.tool = tool
        self.version = version
        self.commandLine = commandLine
        self.vantage = vantage
        self.seed = seed
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.complete = complete
        self.interruption = interruption
    }
}
