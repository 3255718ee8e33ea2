/// The timing rule of an engine start, the same for `verify`, `verify --cycles` and `resilience`
/// (docs/VERIFY.md, "Phases"): the TUN address and the handshake must come within `deadline` of
/// the start of the TUN phase (engines such as iodine configure their TUN only once the handshake is
/// done, so the two share one budget), and the first data through the tunnel then has a `deadline`
/// of its own from the handshake. A slow handshake (iodine's fragment-size probe through a
/// QNAME-minimising resolver takes over 20 s) therefore never eats the data phase's time.
struct PhaseTiming: Sendable {
    var deadline: Duration

    /// When the TUN address and the handshake must be there, for a TUN phase that started at `tunStart`.
    func handshakeDeadline(tunStart: ContinuousClock.Instant) -> ContinuousClock.Instant { tunStart + deadline }

    /// When the first data must have come through, for a handshake done at `handshake`.
    func dataDeadline(handshake: ContinuousClock.Instant) -> ContinuousClock.Instant { handshake + deadline }
}
