public import Base

/// Why `verify` could not run at all (as opposed to a check that failed, which is a verdict).
/// `message` is one line naming what failed and where, so the CLI prints it as is.
public typealias VerifyError = CodedError<VerifyErrorCode>

/// The causes of a `VerifyError`.
public enum VerifyErrorCode: String, Sendable, Hashable, Codable {
    /// The profile or a flag is malformed; the message names the field.
    case invalidProfile
    /// A program the engine or the sandbox needs is not installed.
    case missingTool
    /// Namespaces, veths, nftables and TUN devices need root (CAP_NET_ADMIN).
    case notRoot
    /// Building or removing the sandbox failed (an `ip`/`nft` command, a file).
    case sandboxFailed
    /// The run was interrupted (SIGINT/SIGTERM).
    case interrupted
}

/// A profile field that is missing or malformed: `field` is its JSON path (`resolvers[0].address`).
public struct ProfileError: Error, CustomStringConvertible, Sendable, Hashable {
    public var field: String
    public var reason: String
    /// The other bad fields found with this one (a section is checked whole), in document order.
    public var others: [ProfileError] = []

    public init(field: String, _ reason: String) {
        self.field = field
        self.reason = reason
    }

    /// Every bad field with its JSON path.
    public var fields: [String] { [field] + others.map(\.field) }

    public var description: String {
        guard !others.isEmpty else { return "profile field \(field): \(reason)" }
        return "profile fields " + ([self] + others).map { "\($0.field): \($0.reason)" }.joined(separator: "; ")
    }
}
