/// Selective-repeat ARQ as the DNS-tunnel engines run it: NACKs for gaps, an RFC 6298 timer, a retry
/// limit and a window. Defaults follow MasterDnsVPN's built-in client defaults (ARQ_WINDOW_SIZE 600,
/// ARQ_INITIAL_RTO_SECONDS 1, ARQ_MAX_RTO_SECONDS 5, ARQ_DATA_NACK_MAX_GAP 16,
/// ARQ_DATA_NACK_INITIAL_DELAY_SECONDS 0.1, ARQ_DATA_NACK_REPEAT_SECONDS 1) and its sample config
/// (ARQ_MAX_DATA_RETRIES 126); the RTO floor, the backoff factor and the ACK interval are this tool's
/// choices (docs/SIMULATE.md).
public struct ARQConfiguration: Sendable, Hashable, Codable {
    /// False: no retransmission at all (FEC alone).
    public var enabled = true
    /// Largest number of originals in flight (sent, neither acknowledged nor given up).
    public var window = 600
    /// Retransmissions of one packet before the sender gives up on it.
    public var retryLimit = 126
    public var initialRTOMs = 1000.0
    public var minRTOMs = 100.0
    public var maxRTOMs = 5000.0
    public var backoffFactor = 2.0
    /// How long a gap stays unfilled before the receiver NACKs it (leaves FEC its chance).
    public var nackDelayMs = 100.0
    /// How long before the same gap is NACKed again.
    public var nackRepeatMs = 1000.0
    /// Largest gap (in packets) that triggers NACKs; a longer jump is left to the timer. 0: no NACKs.
    public var nackMaxGap = 16
    /// Least time between two feedback messages (ACK + NACK) from the receiver.
    public var ackIntervalMs = 10.0

    public init() {}
}
