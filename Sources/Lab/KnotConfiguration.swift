/// The configuration (Lua) of a lab's Knot Resolver (`kresd`, Debian `knot-resolver`, 5.x).
/// Everything not set here keeps knot-resolver's default.
struct KnotConfiguration: Sendable, Hashable {
    var domain: String
    var udpLimit: Int?
    var upstreamEDNS: Int?
    var qnameMinimisation: Bool
    var stateDirectory: String

    init(config: LabConfig, stateDirectory: String) {
        domain = config.domain
        udpLimit = config.resolverUDPLimit
        upstreamEDNS = config.resolverUpstreamEDNS
        qnameMinimisation = config.qnameMinimisation
        self.stateDirectory = stateDirectory
    }

    /// knot-resolver 5.6's `net.bufsize` default for both directions (DNS Flag Day 2020).
    static let defaultBufferSize = 1232

    func rendered() -> String {
        var lines = [
            "-- Written by tunnelprobe lab; rewritten on every lab up.",
            "net.ipv6 = false",
            // The client-side address only: kresd answers a wildcard socket from the address the
            // route picks, not the one asked, so the AnyIP aliases are unbound's alone.
            "net.listen('\(LabTopology.resolverClientSideAddress)', \(LabTopology.dnsPort), { kind = 'dns' })",
            // A cache of the lab's own, in its state directory (kresd keeps the LMDB file there).
            "cache.open(16 * MB, 'lmdb://\(stateDirectory)/kresd-cache')",
            // The probe zone goes straight to the responder: STUB asks it as an authoritative
            // server would be asked, without DNSSEC validation (the zone is unsigned and not
            // delegated from any parent the lab can reach).
            "policy.add(policy.suffix(policy.STUB({'\(LabTopology.serverAddress)@\(LabTopology.dnsPort)'}), {todname('\(domain).')}))",
        ]
        if udpLimit != nil || upstreamEDNS != nil {
            // Measured on kresd 5.6 with dig +bufsize=4096: answers up to exactly the first value
            // reach the client, one byte more comes back empty with TC.
            lines.append("net.bufsize(\(udpLimit ?? Self.defaultBufferSize), \(upstreamEDNS ?? Self.defaultBufferSize))")
        }
        if !qnameMinimisation { lines.append("option('NO_MINIMIZE', true)") }
        lines.append("log_level('notice')")
        return lines.joined(separator: "\n") + "\n"
    }
}
