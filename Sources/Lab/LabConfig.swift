/// What a lab is made of. Two `up` calls with equal configurations share one lab.
public struct LabConfig: Sendable, Codable, Hashable {
    /// Where labs keep their state directories unless told otherwise.
    public static let defaultStateRoot = "/run/tunnelprobe/labs"

    /// `[a-z0-9]{1,8}`: it is part of every namespace and interface name (at most 15 characters).
    public var name: String
    /// The zone the resolver delegates to the responder with a `stub-zone`.
    public var domain: String
    /// The largest UDP response the resolver sends to the client; larger answers come back with TC
    /// set (unbound `max-udp-size`, knot-resolver the first argument of `net.bufsize`). `nil` keeps
    /// the software's default (unbound 1.17: 4096; knot-resolver 5.6: 1232).
    public var resolverUDPLimit: Int?
    /// The resolver program; nil means unbound (labs made before knot-resolver could be chosen).
    public var resolverSoftware: ResolverSoftware?
    /// The EDNS UDP size the resolver advertises upstream (RFC 6891 6.2.3; unbound
    /// `edns-buffer-size`, knot-resolver the second argument of `net.bufsize`). nil keeps what the
    /// lab always used: 4096 for unbound (so the responder may send large answers), knot-resolver's
    /// default (1232) for knot.
    public var resolverUpstreamEDNS: Int?
    /// How many queries each unbound thread holds at once (`num-queries-per-thread`; the lab's
    /// unbound runs 2 threads). When the list is full, a new query is dropped unless an old one has
    /// waited past `jostle-timeout`: a resolver that can hold only so many queries at a time, as a
    /// small home router or a NAT does, for tests of a scan's congestion control. nil: 4096.
    public var resolverQueriesPerThread: Int?
    /// Queries per second unbound accepts from one client address (`ip-ratelimit`, with
    /// `ip-ratelimit-factor: 0`: every query above it is dropped, no answer at all): a resolver
    /// whose rate limit the tests know. All of the lab's resolver addresses share it (one client
    /// address). nil: no limit.
    public var resolverIPRateLimit: Int?
    /// unbound as a distribution ships it: one thread, one socket, the kernel's default socket
    /// buffers (the lab's own unbound runs 2 threads with 4 MB buffers). A resolver a 1,000-query
    /// burst overloads, for tests of how a scan reads its own load. nil: the lab's unbound.
    public var resolverStock: Bool?

    /// unbound also serves DNS over TLS (RFC 7858, port 853) and over HTTPS (RFC 8484, port 443,
    /// `/dns-query`) with a certificate from a CA made for this lab (`LabCertificates`). nil: no.
    public var resolverTLS: Bool?
    /// The resolver also has an IPv6 address (`LabTopology.resolverAddress6`, on 2001:db8::/32,
    /// RFC 3849) toward the client, on every port it serves. nil: no.
    public var resolverIPv6: Bool?
    /// With `resolverTLS`: the resolver's certificate is signed by the lab's CA but expired (valid
    /// 2020-01-01 to 2020-01-02), for the named failure `expired`. nil: a current certificate.
    public var resolverCertificateExpired: Bool?

    /// The recursive resolvers a lab can run.
    public enum ResolverSoftware: String, Sendable, Codable, Hashable, CaseIterable {
        /// NLnet Labs unbound (Debian `unbound`).
        case unbound
        /// CZ.NIC Knot Resolver, `kresd` (Debian `knot-resolver`).
        case knot

        /// The daemon's role in the lab state and status.
        public var role: String {
            switch self {
            case .unbound: "unbound"
            case .knot: "kresd"
            }
        }
    }

    /// The resolver this configuration runs.
    public var software: ResolverSoftware { resolverSoftware ?? .unbound }
    /// unbound `use-caps-for-id` (0x20 case randomisation of upstream queries).
    public var resolverCapsForID: Bool
    /// unbound `qname-minimisation` (RFC 9156); on by default as in unbound.
    public var qnameMinimisation: Bool
    /// The argv prefix that runs the responder, e.g. `[binary, "serve"]`; the lab appends
    /// `--domain D --key-file K --listen 198.18.1.2:53`.
    public var serverCommand: [String]
    /// The directory under which this lab's state directory `<stateRoot>/<name>` lives.
    public var stateRoot: String
    /// When `up` considers the responder ready.
    public var responderReadiness: ResponderReadiness
    /// The argv prefix that runs the impairment relay in front of the resolver, e.g.
    /// `[binary, "impair", "--seed", "7", "--up-loss", "0.01"]`; nil for none. The lab appends
    /// `--listen 198.18.0.53:53 --upstream 198.18.0.1:53 --log <state>/impair.jsonl` (`LabImpairment`).
    public var impairCommand: [String]?
    /// When set, the lab also runs the tunnel servers (iodined for this domain, delegated by the
    /// resolver; OpenVPN; wireguard-go) and an internet namespace with nginx (`TunnelServers`).
    public var tunnelDomain: String?
    /// When true, the lab runs the tunnel servers for the probe domain itself, as a user with one
    /// delegation does: iodined on the server address, port `TunnelServers.forwardedPort`, behind the
    /// responder, which the lab starts with `--forward` to it (`serve --forward`). nil or false: the
    /// responder alone holds the probe domain. Excludes `tunnelDomain`.
    public var tunnelBehindResponder: Bool?
    /// dnstt-server's program, when the lab also runs dnstt (with the tunnel servers, for
    /// `dnsttDomain`, in front of microsocks: `TunnelServers`); nil: no dnstt.
    public var dnsttServer: String?

    /// The domain the lab's dnstt-server serves: `d.` + the tunnel domain, delegated by unbound to
    /// `TunnelServers.dnsttAddress`.
    public var dnsttDomain: String? { dnsttServer == nil ? nil : tunnelDomain.map { "d.\($0)" } }

    /// Whether the lab runs the tunnel servers for the probe domain behind `serve --forward`.
    public var forwardsTunnel: Bool { tunnelBehindResponder == true }

    /// The domain the lab's iodined serves: the tunnel domain, or the probe domain behind the responder.
    public var iodineDomain: String? { forwardsTunnel ? domain : tunnelDomain }

    /// How `up` decides that the responder has started.
    public enum ResponderReadiness: String, Sendable, Codable, Hashable, CaseIterable {
        /// The process runs and a UDP socket is bound to port 53 on the server address (or the
        /// wildcard) in the server namespace. The right check for `tunnelprobe serve`.
        case udpListening
        /// The process is still running 300 ms after launch. For stand-ins that do not listen.
        case processAlive
    }

    public init(
        name: String = "default",
        domain: String = "vpn.lab.test",
        resolverUDPLimit: Int? = nil,
        resolverCapsForID: Bool = false,
        qnameMinimisation: Bool = true,
        serverCommand: [String],
        stateRoot: String = LabConfig.defaultStateRoot,
        responderReadiness: ResponderReadiness = .udpListening,
        impairCommand: [String]? = nil,
        tunnelDomain: String? = nil,
        resolverSoftware: ResolverSoftware? = nil,
        resolverUpstreamEDNS: Int? = nil,
        tunnelBehindResponder: Bool = false,
        resolverQueriesPerThread: Int? = nil,
        resolverIPRateLimit: Int? = nil,
        resolverTLS: Bool = false,
        resolverIPv6: Bool = false,
        resolverStock: Bool = false,
        dnsttServer: String? = nil,
        resolverCertificateExpired: Bool = false
    ) {
        self.dnsttServer = dnsttServer
        self.resolverCertificateExpired = resolverCertificateExpired ? true : nil
        self.resolverTLS = resolverTLS ? true : nil
        self.resolverIPv6 = resolverIPv6 ? true : nil
        self.resolverStock = resolverStock ? true : nil
        self.tunnelBehindResponder = tunnelBehindResponder ? true : nil
        self.resolverIPRateLimit = resolverIPRateLimit
        self.resolverQueriesPerThread = resolverQueriesPerThread
        self.resolverSoftware = resolverSoftware
        self.resolverUpstreamEDNS = resolverUpstreamEDNS
        self.name = name
        self.domain = domain
        self.resolverUDPLimit = resolverUDPLimit
        self.resolverCapsForID = resolverCapsForID
        self.qnameMinimisation = qnameMinimisation
        self.serverCommand = serverCommand
        self.stateRoot = stateRoot
        self.responderReadiness = responderReadiness
        self.impairCommand = impairCommand
        self.tunnelDomain = tunnelDomain
    }

    /// The accepted range of `resolverUDPLimit`. unbound takes smaller values, but then even a TC
    /// reply with a long question no longer fits.
    public static let udpLimitRange = 128...65535
    /// unbound takes any positive number; below 8 a lab could not even start.
    public static let queriesPerThreadRange = 8...65536
    /// RFC 6891 6.2.5: values below 512 are treated as 512.
    public static let upstreamEDNSRange = 512...65535

    /// Throws the first thing wrong with the configuration.
    public func validate() throws(LabError) {
        try LabConfig.validate(name: name)
        if let problem = LabConfig.domainProblem(domain) {
            throw LabError(.invalidConfig, "invalid lab domain \"\(domain)\": \(problem)")
        }
        if let limit = resolverUDPLimit, !LabConfig.udpLimitRange.contains(limit) {
            throw LabError(
                .invalidConfig,
                "resolver UDP limit \(limit) is outside \(LabConfig.udpLimitRange.lowerBound)...\(LabConfig.udpLimitRange.upperBound)"
            )
        }
        if let size = resolverUpstreamEDNS, !LabConfig.upstreamEDNSRange.contains(size) {
            throw LabError(.invalidConfig,
                           "resolver upstream EDNS size \(size) is outside \(LabConfig.upstreamEDNSRange.lowerBound)...\(LabConfig.upstreamEDNSRange.upperBound)")
        }
        if forwardsTunnel, tunnelDomain != nil {
            throw LabError(.invalidConfig, "the tunnel behind the responder serves the probe domain; drop the separate tunnel domain")
        }
        if let n = resolverQueriesPerThread {
            guard LabConfig.queriesPerThreadRange.contains(n) else {
                throw LabError(.invalidConfig, "resolver queries per thread \(n) is outside \(LabConfig.queriesPerThreadRange.lowerBound)...\(LabConfig.queriesPerThreadRange.upperBound)")
            }
            guard software == .unbound else {
                throw LabError(.invalidConfig, "the queries held per thread are set for unbound only")
            }
        }
        if let n = resolverIPRateLimit {
            guard (1...1_000_000).contains(n) else {
                throw LabError(.invalidConfig, "resolver ip rate limit \(n) is outside 1...1000000 queries per second")
            }
            guard software == .unbound else { throw LabError(.invalidConfig, "the ip rate limit is set for unbound only") }
        }
        if resolverStock == true, software != .unbound {
            throw LabError(.invalidConfig, "the stock resolver settings are for unbound only")
        }
        if software == .knot, iodineDomain != nil {
            throw LabError(.invalidConfig, "the tunnel servers run behind unbound only (its split-name rules); drop the tunnel domain or use unbound")
        }
        if let dnsttServer {
            guard tunnelDomain != nil else { throw LabError(.invalidConfig, "dnstt-server runs with the tunnel servers: give a tunnel domain") }
            guard dnsttServer.hasPrefix("/") else { throw LabError(.invalidConfig, "dnstt-server \"\(dnsttServer)\" is not an absolute path") }
        }
        if let tunnel = tunnelDomain {
            if let problem = LabConfig.domainProblem(tunnel) {
                throw LabError(.invalidConfig, "invalid tunnel domain \"\(tunnel)\": \(problem)")
            }
            guard tunnel != domain, !tunnel.hasSuffix("." + domain), !domain.hasSuffix("." + tunnel) else {
                throw LabError(.invalidConfig, "the tunnel domain \(tunnel) must not overlap the probe domain \(domain)")
            }
        }
        guard let program = serverCommand.first, !program.isEmpty else {
            throw LabError(.invalidConfig, "the server command is empty")
        }
        if let impair = impairCommand { try LabImpairment.validate(impair) }
        guard stateRoot.hasPrefix("/"), stateRoot.count > 1 else {
            throw LabError(.invalidConfig, "the state root \"\(stateRoot)\" is not an absolute path")
        }
    }

    /// Names go into namespace and interface names: `tp-<name>-rc` must stay within 15 bytes.
    public static func validate(name: String) throws(LabError) {
        let allowed = name.utf8.allSatisfy { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
        guard (1...8).contains(name.utf8.count), allowed else {
            throw LabError(.invalidName, "invalid lab name \"\(name)\": use 1 to 8 characters from a-z and 0-9")
        }
    }

    /// A host name in presentation form without the trailing dot (RFC 1035 section 2.3.1, with
    /// digits allowed first as RFC 1123 does); `nil` when it is fine.
    static func domainProblem(_ domain: String) -> String? {
        guard !domain.isEmpty, domain.utf8.count <= 253 else { return "it must have 1 to 253 characters" }
        let labels = domain.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2 else { return "it needs at least two labels" }
        for label in labels {
            guard (1...63).contains(label.utf8.count) else { return "every label needs 1 to 63 characters" }
            let ok = label.utf8.allSatisfy {
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                    || $0 == UInt8(ascii: "-")
            }
            guard ok else { return "use lowercase letters, digits and hyphens" }
            guard label.first != "-", label.last != "-" else { return "a label cannot start or end with a hyphen" }
        }
        return nil
    }
}
