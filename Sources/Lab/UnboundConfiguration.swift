/// The unbound.conf of a lab's resolver. Everything not set here keeps unbound's default.
struct UnboundConfiguration: Sendable, Hashable {
    var domain: String
    var udpLimit: Int?
    var upstreamEDNS: Int?
    var capsForID: Bool
    var qnameMinimisation: Bool
    var stateDirectory: String
    /// Delegated to iodined (`TunnelServers`) when the lab runs the tunnel servers.
    var tunnelDomain: String?
    /// Delegated to dnstt-server (`TunnelServers.dnsttAddress`) when the lab runs it.
    var dnsttDomain: String?
    /// Whether the lab runs the tunnel servers (a tunnel domain, or iodined behind the responder).
    var tunnelServers: Bool
    var queriesPerThread: Int?
    var ipRateLimit: Int?
    var stock: Bool
    var tls: Bool
    var ipv6: Bool

    init(config: LabConfig, stateDirectory: String) {
        domain = config.domain
        tunnelDomain = config.tunnelDomain
        dnsttDomain = config.dnsttDomain
        tunnelServers = config.iodineDomain != nil
        udpLimit = config.resolverUDPLimit
        upstreamEDNS = config.resolverUpstreamEDNS
        capsForID = config.resolverCapsForID
        qnameMinimisation = config.qnameMinimisation
        queriesPerThread = config.resolverQueriesPerThread
        ipRateLimit = config.resolverIPRateLimit
        stock = config.resolverStock == true
        tls = config.resolverTLS == true
        ipv6 = config.resolverIPv6 == true
        self.stateDirectory = stateDirectory
    }

    /// unbound serves these top-level names itself unless told `nodefault` (RFC 6761 names).
    static let defaultLocalTopLevelZones: Set<String> = ["test", "invalid", "onion"]

    func rendered() -> String {
        var server: [String] = [
            // Foreground, no privilege drop, no chroot: the lab supervises the process itself and
            // its stderr (the log) is a file opened by the launcher.
            "do-daemonize: no",
            "username: \"\"",
            "chroot: \"\"",
            "directory: \"\(stateDirectory)\"",
            "pidfile: \"\(stateDirectory)/unbound.pid\"",
            "use-syslog: no",
            "logfile: \"\"",
            "log-time-ascii: yes",
            "verbosity: 1",
            // One wildcard socket with IP_PKTINFO so replies leave from the address the query was
            // sent to, including every AnyIP alias in \(LabTopology.resolverAliases).
            "interface: 0.0.0.0",
            "interface-automatic: yes",
            "port: \(LabTopology.dnsPort)",
            "do-ip4: yes",
            "do-ip6: \(capsOrNo(ipv6))",
            "access-control: \(LabTopology.clientSubnet) allow",
            "module-config: \"iterator\"",
            // Advertised upstream: 4096 unless told, so the responder may send large answers; a lab
            // that models a stock unbound sets 1232 (its default since 1.12, DNS Flag Day 2020).
            "edns-buffer-size: \(upstreamEDNS ?? 4096)",
            // A responder that was down or dropped probes must not be skipped for infra-host-ttl.
            "infra-keep-probing: yes",
            "qname-minimisation: \(capsOrNo(qnameMinimisation))",
            "use-caps-for-id: \(capsOrNo(capsForID))",
        ]
        if stock {
            // unbound's defaults: one thread, the kernel's socket buffers (LabConfig.resolverStock).
            server += ["num-threads: 1"] + (queriesPerThread.map { ["num-queries-per-thread: \($0)"] } ?? [])
        } else {
            // A thread per core and deep socket buffers: a 1,000-address scan sends bursts of a few
            // hundred queries at once, and a drop here would be blamed on the path.
            server += ["num-threads: 2", "so-reuseport: yes", "so-rcvbuf: 4m", "so-sndbuf: 4m",
                       "num-queries-per-thread: \(queriesPerThread ?? 4096)"]
        }
        if ipv6 {
            // The wildcard with IP_PKTINFO, as for IPv4; the stub zone stays IPv4.
            server += ["interface: ::0", "access-control: \(LabTopology.subnet6) allow"]
        }
        if tls {
            // unbound 1.17 (built with libnghttp2): tls-port serves DoT, https-port DoH at /dns-query;
            // interface-automatic listens on every port of the list.
            server += [
                "interface-automatic-ports: \"\(LabTopology.dnsPort) \(LabTopology.tlsPort) \(LabTopology.httpsPort)\"",
                "tls-service-key: \"\(LabCertificates.keyPath(stateDirectory))\"",
                "tls-service-pem: \"\(LabCertificates.certificatePath(stateDirectory))\"",
                "tls-port: \(LabTopology.tlsPort)",
                "https-port: \(LabTopology.httpsPort)",
                // unbound takes 10 TCP/TLS clients per thread by default; a lab stands in for up to
                // 1,024 resolvers (its aliases), each of which a scan holds connections to.
                "incoming-num-tcp: 1024",
            ]
        }
        if let ipRateLimit {
            // unbound: above this many queries per second from one address every query is dropped
            // (factor 0: none let through), with no answer.
            server += ["ip-ratelimit: \(ipRateLimit)", "ip-ratelimit-factor: 0"]
        }
        if let udpLimit {
            // Measured on unbound 1.17.1: answers up to exactly this many bytes pass, one byte
            // more comes back as an empty answer with TC set.
            server.append("max-udp-size: \(udpLimit)")
        }
        if let top = domain.split(separator: ".").last.map(String.init),
           UnboundConfiguration.defaultLocalTopLevelZones.contains(top) {
            server.append("local-zone: \"\(top).\" nodefault")
        }
        if tunnelServers { server += LabSplitNames.unboundLines }
        var text = "# Written by tunnelprobe lab; rewritten on every lab up.\nserver:\n"
        for line in server { text += "    \(line)\n" }
        text += "stub-zone:\n"
        text += "    name: \"\(domain).\"\n"
        text += "    stub-addr: \(LabTopology.serverAddress)@\(LabTopology.dnsPort)\n"
        if let tunnelDomain {
            text += "stub-zone:\n    name: \"\(tunnelDomain).\"\n    stub-addr: \(TunnelServers.listenAddress)@\(LabTopology.dnsPort)\n"
        }
        if let dnsttDomain {
            // Inside the tunnel domain: unbound takes the closest stub zone.
            text += "stub-zone:\n    name: \"\(dnsttDomain).\"\n    stub-addr: \(TunnelServers.dnsttAddress)@\(LabTopology.dnsPort)\n"
        }
        return text
    }

    private func capsOrNo(_ flag: Bool) -> String { flag ? "yes" : "no" }
}
