/// One packet seen leaving the sandbox, decoded far enough to say what it is and where it went.
/// Decoding is total: a frame too short for a header is kept as `other` with its length.
public struct UplinkPacket: Sendable, Hashable, Codable {
    public enum Class: String, Sendable, Hashable, Codable {
        /// The tunnel's own transport (to a carrier endpoint; for DNS tunnels, a query under the tunnel domain).
        case carrier
        /// Link-layer upkeep: ARP, IPv6 neighbour discovery and MLD (RFC 4861, RFC 3810).
        case linkControl
        /// A DNS query that is not the carrier: a name resolved around the tunnel.
        case dns
        /// Any other IPv6 packet.
        case ipv6
        /// Any other IPv4 packet.
        case ipv4
        case other
    }

    public var atMs: Int
    public var kind: Class
    public var family: Int?
    public var source: String?
    public var destination: String?
    public var transport: String?
    public var sourcePort: Int?
    public var destinationPort: Int?
    /// For DNS: the question name and type.
    public var query: String?
    public var length: Int
    /// The split-tunnel domain this packet belongs to (its destination is one of the domain's
    /// resolved addresses, or it asks for the name); `nil` elsewhere.
    public var domain: String?

    public init(atMs: Int, kind: Class, family: Int? = nil, source: String? = nil, destination: String? = nil,
                transport: String? = nil, sourcePort: Int? = nil, destinationPort: Int? = nil, query: String? = nil,
                length: Int, domain: String? = nil) {
        self.atMs = atMs
        self.kind = kind
        self.family = family
        self.source = source
        self.destination = destination
        self.transport = transport
        self.sourcePort = sourcePort
        self.destinationPort = destinationPort
        self.query = query
        self.length = length
        self.domain = domain
    }

    /// A line for people: `+812 ms udp 198.19.7.2:40211 -> 198.18.0.1:53 DNS A x.leak...`.
    public var summary: String {
        var text = "+\(atMs) ms \(transport ?? "?")"
        if let source { text += " " + endpoint(source, sourcePort) }
        if let destination { text += " -> " + endpoint(destination, destinationPort) }
        if let query { text += " DNS \(query)" }
        text += " (\(length) B)"
        if let domain { text += " [\(domain)]" }
        return text
    }

    private func endpoint(_ host: String, _ port: Int?) -> String {
        guard let port else { return host }
        return host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}
