import Results
/// Which check a packet seen on the uplink is evidence for (docs/VERIFY.md, "Evidence"). Each
/// non-carrier packet belongs to at most one check:
/// 1. by what it carries, first: a DNS query for a name a check asked for belongs to that check, and a
///    packet to the IPv6 target belongs to the check whose port it was sent to, whenever it was seen
///    (a clock can put a packet a hair early or late; its content cannot lie about who sent it);
/// 2. otherwise by its capture time, in nanoseconds since the run's origin, in half-open windows:
///    the tunnel-failure window is `[failureStart, end)`; before it, DNS queries from `checksStart`
///    on are DNS leaks and any IPv6 packet is an IPv6 leak; anything else is nobody's evidence.
struct EvidenceRule: Sendable {
    enum Owner: Sendable, Hashable {
        case none, dnsLeak, ipv6Leak, tunnelFailure
    }

    /// First instant of the DNS and IPv6 checks; nil when they did not run.
    var checksStart: Duration?
    /// First instant of the tunnel-failure check (taken before the engine is killed); nil when it did not run.
    var failureStart: Duration?
    /// Names the DNS leak check asked for (lowercase, no trailing dot).
    var dnsLeakNames: Set<String> = []
    /// Names the tunnel-failure check asked for.
    var failureNames: Set<String> = []
    /// The IPv6 target both checks send to, and the port each uses.
    var ipv6Target: String
    var ipv6CheckPort = 443
    var failurePort = 8443

    func owner(of packet: UplinkPacket, at time: Duration) -> Owner {
        guard packet.kind != .carrier, packet.kind != .linkControl else { return .none }
        let afterFailure = failureStart.map { time >= $0 } ?? false
        if packet.kind == .dns {
            if let name = SplitCheck.queryName(packet) {
                if failureNames.contains(name) { return .tunnelFailure }
                if dnsLeakNames.contains(name) { return .dnsLeak }
            }
            if afterFailure { return .tunnelFailure }
            if let start = checksStart, time >= start { return .dnsLeak }
            return .none
        }
        if packet.destination == ipv6Target {
            if packet.destinationPort == failurePort, failureStart != nil { return .tunnelFailure }
            if packet.destinationPort == ipv6CheckPort, checksStart != nil { return .ipv6Leak }
        }
        if afterFailure { return .tunnelFailure }
        if packet.family == 6 { return .ipv6Leak }
        return .none
    }
}
