/// Why a lab operation failed. `message` is one line that says what failed and where, so the
/// CLI can print it as is.
public struct LabError: Error, CustomStringConvertible, Sendable, Hashable {
    public enum Code: String, Sendable, Hashable, Codable {
        /// Namespaces, veths and port 53 need root.
        case notRoot
        /// `ip` (iproute2) or `unbound` is not installed.
        case missingTool
        /// An external command (usually `ip`) exited non-zero or could not be spawned.
        case commandFailed
        /// The lab name is not `[a-z0-9]{1,8}`.
        case invalidName
        /// Another configuration value is out of range (domain, UDP limit, server command).
        case invalidConfig
        /// The operation needs a lab that is up, and there is none of that name.
        case notUp
        /// A daemon exited or did not become ready during `up`.
        case startFailed
        /// A DNS probe got no reply before its deadline.
        case timedOut
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        // One line, whatever a tool printed.
        self.message = message.split(whereSeparator: \.isNewline).joined(separator: " ")
    }

    public var description: String { message }

    /// Equal by code, so a test can name the error it expects.
    public static func == (lhs: LabError, rhs: LabError) -> Bool { lhs.code == rhs.code }

    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
