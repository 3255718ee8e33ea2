public import Base

/// A resolver's address and port, parsed from the forms tunnelprobe and the engines use:
/// `1.2.3.4`, `1.2.3.4:5353`, `2001:db8::1`, `[2001:db8::1]:53`, `dns.example:53`, and the forms
/// that name a transport (`tcp://`, `tls://…#name`, `https://…/dns-query#name`: `ResolverTarget`).
public struct ResolverAddress: Sendable, Hashable, Codable {
    /// The transport-naming form, when the text had a scheme.
    public var target: ResolverTarget?
    /// How the scan reached the resolver (UDP for the forms without a scheme).
    public var transport: DNSTransport { target?.transport ?? .udp }
    /// The host without brackets.
    public var host: String
    /// The UDP port (53 when the text had none).
    public var port: Int

    /// The port DNS uses when none is given (RFC 1035 4.2.1).
    public static let defaultPort = 53

    public init(host: String, port: Int = ResolverAddress.defaultPort) {
        self.host = host
        self.port = port
    }

    /// Parses `text`; nil for an empty host, a port outside 1...65535 or unbalanced brackets.
    public init?(_ text: String) {
        let s = text.filter { !$0.isWhitespace }
        guard !s.isEmpty else { return nil }
        if s.contains("://") {
            guard let target = try? ResolverTarget(parsing: s) else { return nil }
            self.init(host: target.endpoint.host, port: Int(target.endpoint.port))
            self.target = target
            return
        }
        if s.hasPrefix("[") {
            guard let close = s.firstIndex(of: "]") else { return nil }
            let host = String(s[s.index(after: s.startIndex)..<close])
            let rest = s[s.index(after: close)...]
            guard !host.isEmpty else { return nil }
            if rest.isEmpty {
                self.init(host: host)
                return
            }
            guard rest.hasPrefix(":"), let port = Int(rest.dropFirst()), (1...65_535).contains(port) else { return nil }
            self.init(host: host, port: port)
            return
        }
        let colons = s.filter { $0 == ":" }.count
        if colons == 1, let colon = s.firstIndex(of: ":") {
            let host = String(s[..<colon])
            guard !host.isEmpty, let port = Int(s[s.index(after: colon)...]), (1...65_535).contains(port) else { return nil }
            self.init(host: host, port: port)
            return
        }
        // No colon (IPv4 or a name) or several (bare IPv6): the whole text is the host.
        self.init(host: s)
    }

    /// The host is an IPv6 address (it contains a colon).
    public var isIPv6: Bool { host.contains(":") }

    /// `host:port`, with brackets around IPv6 hosts: what dnstt's `-udp` and slipstream's
    /// `--resolver` take.
    public var hostPort: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// What an engine that speaks only UDP to its resolvers writes instead of the address of a
    /// TCP, DoT or DoH pair: a comment that says why it is left out; nil for a UDP pair.
    public func udpOnlyNote(engine: String) -> String? {
        guard transport != .udp else { return nil }
        return "# \(target?.description ?? hostPort): measured over \(transport); \(engine) asks its resolvers over UDP only, so it is not listed"
    }

    /// One `client_resolvers.txt` line for MasterDnsVPN: the bare IPv4 address on port 53,
    /// `ip:port` otherwise, `[v6]:port` for IPv6 (the forms its sample resolver file lists).
    public var masterDnsVPNLine: String {
        if isIPv6 { return "[\(host)]:\(port)" }
        return port == Self.defaultPort ? host : "\(host):\(port)"
    }
}
