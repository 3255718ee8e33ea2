public import Base

/// Why a lab operation failed. `message` is one line that says what failed and where, so the
/// CLI can print it as is.
public typealias LabError = CodedError<LabErrorCode>

/// The causes of a `LabError`.
public enum LabErrorCode: String, Sendable, Hashable, Codable {
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
