/// Every name and address of a lab, derived from its name alone so that `down` can find what a
/// killed `up` left behind without any state file.
///
/// ```
/// client ns            resolver ns                          server ns
/// tp-N-c 198.18.0.2 -- tp-N-rc 198.18.0.1
///                      lo: local 198.18.4.0/22 (AnyIP)
///                      tp-N-rs 198.18.1.1 ------------------ tp-N-s 198.18.1.2
/// ```
/// Only the benchmarking range 198.18.0.0/15 (RFC 2544) is used.
struct LabTopology: Sendable, Hashable {
    static let clientAddress = "198.18.0.2"
    static let resolverClientSideAddress = "198.18.0.1"
    static let resolverServerSideAddress = "198.18.1.1"
    static let serverAddress = "198.18.1.2"
    static let prefixLength = 24
    static let clientSubnet = "198.18.0.0/24"
    /// 1,024 resolver addresses for scan benchmarks; local in the resolver namespace.
    static let resolverAliases = "198.18.4.0/22"
    static let dnsPort = 53
    /// IPv6 on the client link (documentation prefix 2001:db8::/32, RFC 3849), for labs with `resolverIPv6`.
    static let clientAddress6 = "2001:db8:18::2"
    public static let resolverAddress6 = "2001:db8:18::53"
    static let subnet6 = "2001:db8:18::/64"
    /// DNS over TLS (RFC 7858 3.1) and DNS over HTTPS (HTTPS, RFC 9110 4.2.2) on the resolver.
    public static let tlsPort = 853
    public static let httpsPort = 443

    let name: String
    /// Whether the client link also carries IPv6 (`LabConfig.resolverIPv6`).
    var ipv6 = false

    func namespace(_ role: Lab.Role) -> String {
        switch role {
        case .client: "tp-\(name)-cli"
        case .resolver: "tp-\(name)-res"
        case .server: "tp-\(name)-srv"
        }
    }

    /// The netns mount point `ip netns add` creates.
    func namespacePath(_ role: Lab.Role) -> String { "/run/netns/\(namespace(role))" }

    var clientLink: String { "tp-\(name)-c" }
    var resolverClientLink: String { "tp-\(name)-rc" }
    var resolverServerLink: String { "tp-\(name)-rs" }
    var serverLink: String { "tp-\(name)-s" }
    var links: [String] { [clientLink, resolverClientLink, resolverServerLink, serverLink] }

    /// The `ip` argument lists that build the network once the namespaces exist. Veths are created
    /// straight inside their namespaces, so no half-built pair is ever left in the root namespace.
    var networkCommands: [[String]] {
        let cli = namespace(.client), res = namespace(.resolver), srv = namespace(.server)
        let p = "/\(LabTopology.prefixLength)"
        return [
            ["-n", cli, "link", "set", "lo", "up"],
            ["-n", res, "link", "set", "lo", "up"],
            ["-n", srv, "link", "set", "lo", "up"],
            ["link", "add", "name", clientLink, "netns", cli, "type", "veth", "peer", "name", resolverClientLink, "netns", res],
            ["link", "add", "name", serverLink, "netns", srv, "type", "veth", "peer", "name", resolverServerLink, "netns", res],
            ["-n", cli, "address", "add", LabTopology.clientAddress + p, "dev", clientLink],
            ["-n", res, "address", "add", LabTopology.resolverClientSideAddress + p, "dev", resolverClientLink],
            ["-n", res, "address", "add", LabTopology.resolverServerSideAddress + p, "dev", resolverServerLink],
            ["-n", srv, "address", "add", LabTopology.serverAddress + p, "dev", serverLink],
            ["-n", cli, "link", "set", clientLink, "up"],
            ["-n", res, "link", "set", resolverClientLink, "up"],
            ["-n", res, "link", "set", resolverServerLink, "up"],
            ["-n", srv, "link", "set", serverLink, "up"],
        ] + (ipv6 ? [
            // nodad: usable at once (no duplicate address detection on a link of two namespaces).
            ["-n", cli, "address", "add", LabTopology.clientAddress6 + "/64", "dev", clientLink, "nodad"],
            ["-n", res, "address", "add", LabTopology.resolverAddress6 + "/64", "dev", resolverClientLink, "nodad"],
        ] : []) + [
            ["-n", cli, "route", "add", LabTopology.resolverAliases, "via", LabTopology.resolverClientSideAddress],
            // AnyIP: every address of the prefix is local, one route instead of 1,024 addresses.
            ["-n", res, "route", "add", "local", LabTopology.resolverAliases, "dev", "lo"],
        ]
    }
}
