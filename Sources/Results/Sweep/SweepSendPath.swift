/// How the sweep's probes leave the machine (issue 31): through the kernel's UDP stack, or as
/// IPv4 datagrams the sweep builds itself and hands to a packet socket (packet(7)), which skips the
/// kernel's UDP, IP and routing work per probe. Answers are read from a UDP socket either way.
public enum SweepSendPath: String, Codable, Sendable, Hashable, CaseIterable {
    case packet
    case udp
}

/// `--send-path`: a path by name, or `auto` (the packet path when this machine allows it).
public enum SweepSendPathChoice: String, Codable, Sendable, Hashable, CaseIterable {
    case auto
    case packet
    case udp
}

/// sweep.json's record of the send path: what was asked, what was used and why.
public struct SweepSendPathReport: Codable, Sendable, Hashable {
    public var requested: SweepSendPathChoice
    public var used: SweepSendPath
    /// Why this path: the route the packet path found, or why it could not be used.
    public var reason: String
    /// Packet path: the interface, the source address and the next hop the frames were addressed to.
    public var interface: String?
    public var source: String?
    public var nextHop: String?

    public init(requested: SweepSendPathChoice, used: SweepSendPath, reason: String,
                interface: String? = nil, source: String? = nil, nextHop: String? = nil) {
        self.requested = requested
        self.used = used
        self.reason = reason
        self.interface = interface
        self.source = source
        self.nextHop = nextHop
    }
}
