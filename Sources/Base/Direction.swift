/// One direction of a DNS path, the one type every module uses for it: `up` carries queries (client to
/// resolver to responder), `down` carries responses. The raw strings are what every file writes
/// (fates/1 `direction`, impair's log, rank's `--target-direction`).
///
/// What needs more than one direction says so in terms of this type: a fates stream is `.oneWay(_)`
/// or the round trip (`FateStream.Direction`), the simulator takes the directions it runs
/// (`SimulationRequest.Transfer`).
public enum Direction: String, Sendable, Hashable, CaseIterable, Codable {
    /// Client to upstream (queries).
    case up
    /// Upstream to client (responses).
    case down

    /// The other direction.
    public var reversed: Direction { self == .up ? .down : .up }
}
