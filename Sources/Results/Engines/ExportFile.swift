/// A text an engine reads, as the user would save or paste it.
public struct ExportFile: Sendable, Hashable, Codable {
    /// A file name (`client_resolvers.txt`) or, for command-line arguments, a descriptive name
    /// ending in `.args`.
    public var name: String
    /// The exact text, newline-terminated.
    public var text: String

    public init(name: String, text: String) {
        self.name = name
        self.text = text
    }
}
