/// Where a model's facts come from: one repository at one commit, and the files read there.
public struct SourceCitation: Sendable, Hashable, Codable {
    /// `owner/name` on GitHub (or the canonical URL when the project is not hosted there).
    public var repository: String
    /// The full commit id that was read.
    public var commit: String
    /// The files, relative to the repository root, the model's constants come from.
    public var files: [String]

    public init(repository: String, commit: String, files: [String]) {
        self.repository = repository
        self.commit = commit
        self.files = files
    }
}
