/// What a resolver's TCP, TLS or HTTPS connections did over a measurement: how many were set up
/// (TCP connected and, for TLS and HTTPS, the handshake and certificate check passed) and how many
/// failed, by the name of their failure (`TransportFailure.name`). Over a stream transport a query
/// that never leaves because its connection failed is a connection failure, not path loss.
public struct ConnectionCounts: Sendable, Codable, Hashable {
    public var opened = 0
    public var failed = 0
    /// Failed set-ups by `TransportFailure.name` (connectionRefused, unknownCA, ...).
    public var failures: [String: Int] = [:]

    public init(opened: Int = 0, failed: Int = 0, failures: [String: Int] = [:]) {
        self.opened = opened
        self.failed = failed
        self.failures = failures
    }

    /// The counts since `earlier` (the same resolver's counts at an earlier moment).
    public func since(_ earlier: ConnectionCounts) -> ConnectionCounts {
        var f = failures
        for (name, n) in earlier.failures { f[name, default: 0] -= n }
        return ConnectionCounts(opened: opened - earlier.opened, failed: failed - earlier.failed, failures: f.filter { $0.value > 0 })
    }
}
