/// The timing rule of an engine start, the same for `verify`, `verify --cycles` and `resilience`
/// (docs/VERIFY.md, "Phases"): the TUN address and the handshake must come within `deadline` of
/// the start of the TUN phase (engines such as iodine configure their TUN only once the handshake is
/// done, so the two share one budget), and the first data through the tunnel then has a `deadline`
/// of its own from the handshake. A slow handshake (iodine's fragment-size probe through a
/// QNAME-minimising resolver takes over 20 s) therefore never eats the data phase's time.
struct PhaseTiming: Sendable {
    var deadline: Duration
    /// `--handshake-deadline`: the TUN and handshake budget when it differs from `deadline` (the
    /// seed waits 25 s for MasterDnsVPN's session id and accepted resolver).
    var handshake: Duration?

    init(deadline: Duration, handshake: Duration? = nil) {
        self.deadline = deadline
        self.handshake = handshake
    }

    /// How long one HTTP GET through the tunnel may take before the data phase tries again. A GET
    /// is a TCP handshake and a request: several round trips, each a DNS query through the resolver
    /// (hundreds of milliseconds behind a QNAME-minimising one), so a second is too short.
    static let dataProbeTimeout: Duration = .seconds(3)

    /// When the TUN address and the handshake must be there, for a TUN phase that started at `tunStart`.
    func handshakeDeadline(tunStart: ContinuousClock.Instant) -> ContinuousClock.Instant { tunStart + (handshake ?? deadline) }

    /// When the first data must have come through, for a handshake done at `handshake`.
    func dataDeadline(handshake: ContinuousClock.Instant) -> ContinuousClock.Instant { handshake + deadline }
}
