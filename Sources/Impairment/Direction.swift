/// Which way a datagram crosses the relay.
public enum Direction: String, Sendable, Hashable, CaseIterable, Codable {
    /// Client to upstream (queries).
    case up
    /// Upstream to client (responses).
    case down
}
