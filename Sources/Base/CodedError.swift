/// An error of one of a closed set of causes (`code`, what a caller branches on: the exit code, a
/// retry) with one line that says what failed and where (`message`, what the CLI prints as is).
/// Equal by code, so a test can name the error it expects.
public struct CodedError<Code: Hashable & Sendable>: Error, CustomStringConvertible, Sendable, Hashable {
    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        // One line, whatever a tool printed.
        self.message = message.split(whereSeparator: \.isNewline).joined(separator: " ")
    }

    public var description: String { message }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }

    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
