public import Base
import Foundation
public import Results

/// `scan --e2e`: the real engine pinned to one resolver of a scanned pair, through verify's own
/// engine abstraction (`EngineKind`, `Engine.make`, `Verifier`), so every engine `verify` can
/// start can be measured end to end. Each pair is one `verify` run with no leak checks: engine,
/// TUN, routes, handshake, first data, then a bulk download (Transfer.swift).
public struct EndToEndConfiguration: Sendable {
    public var profile: Profile
    public var engine: EngineKind
    public var overrides: EngineOverrides
    /// What the first data fetches through the tunnel (any HTTP answer counts).
    public var whoami: WhoamiURL
    public var bulk: BulkTransfer?
    /// Each phase's deadline up to the handshake (verify's `--deadline`).
    public var deadline: Duration = .seconds(25)
    public var seed: UInt64
    public var stateRoot = Sandbox.defaultStateRoot
    public var socks: Endpoint?
    /// The tunnel domain every pair's engine uses instead of the pair's probe domain (`--e2e-domain
    /// profile`): a server that holds its own domain and key (dnstt-server) cannot answer the probe
    /// domain `serve` answers, so the scan measures the resolvers on its domain and the engine runs
    /// on the tunnel's. Nil: each pair's domain.
    public var engineDomain: String?

    public init(profile: Profile, engine: EngineKind, overrides: EngineOverrides, whoami: WhoamiURL, bulk: BulkTransfer?, seed: UInt64) {
        self.profile = profile
        self.engine = engine
        self.overrides = overrides
        self.whoami = whoami
        self.bulk = bulk
        self.seed = seed
    }

    /// The `verify` run for one pair: the profile pinned to the pair's resolver and domain, and in
    /// a `command` engine's command line `{resolver}` (ip:port), `{resolver-ip}`, `{resolver-url}`
    /// (the resolver in the form that names its transport: `tls://ip:853#name`, `https://…`),
    /// `{transport}` (udp, tcp, tls, https) and `{domain}` replaced by the pair's (`{tun}` stays for
    /// verify to fill in); the domain is `engineDomain` when set.
    public func verification(resolver: Endpoint, domain: String, index: Int, target: ResolverTarget? = nil) -> VerifyConfiguration {
        var pinned = overrides
        let domain = engineDomain ?? domain
        let target = target ?? ResolverTarget(endpoint: resolver)
        pinned.command = overrides.command.map {
            $0.replacingOccurrences(of: "{resolver-ip}", with: resolver.host)
                .replacingOccurrences(of: "{resolver-url}", with: target.description)
                .replacingOccurrences(of: "{transport}", with: target.transport.rawValue)
                .replacingOccurrences(of: "{resolver}", with: resolver.description)
                .replacingOccurrences(of: "{domain}", with: domain)
        }
        // dnstt asks its resolver over DoT or DoH itself (-dot, -doh): pinned in the pair's transport.
        let carried = engine == .dnstt ? target : ResolverTarget(endpoint: resolver)
        var configuration = VerifyConfiguration(profile: profile.pinned(to: carried, domain: domain), engine: engine,
                                                overrides: pinned, whoami: whoami, seed: seed &+ UInt64(index))
        configuration.checks = []
        configuration.deadline = deadline
        configuration.stateRoot = stateRoot
        // A SOCKS-shaped engine (MasterDnsVPN, dnstt) keeps its own listener unless --e2e-socks says
        // otherwise; the engine's listener moves with it.
        if let socks {
            configuration.socks = socks
            configuration.overrides.socks = socks
        }
        configuration.bulk = bulk
        return configuration
    }

    /// Root, the engine's program and its settings, checked once before the scan (on a
    /// placeholder pair: the profile's own resolver, or a documentation address).
    public func preflight() async throws(VerifyError) {
        let resolver = profile.resolvers.first?.endpoint ?? Endpoint(address: .v4(0xC000_0201), port: 53)
        try await verification(resolver: resolver, domain: profile.domain ?? "example.invalid", index: 0).preflight()
    }

    /// Runs the engine for one pair. Never throws for the pair's own failure (that is the
    /// result's verdict and failure); throws only when the run could not be made at all.
    public func run(resolver: Endpoint, domain: String, index: Int, target: ResolverTarget? = nil) async throws(VerifyError) -> VerifyResult {
        try await Verifier.run(verification(resolver: resolver, domain: domain, index: index, target: target))
    }

    /// Why this engine cannot be run through a pair measured over `transport`, or nil when it can:
    /// iodine, MasterDnsVPN, OpenVPN and WireGuard here ask their resolver over UDP only, so a pair
    /// scanned over TCP, TLS or HTTPS is not run through them (its UDP figures were not measured);
    /// dnstt asks over UDP, DoT or DoH (`-udp`, `-dot`, `-doh`), not plain TCP. A `command` engine
    /// gets the pair's transport in `{resolver-url}` and `{transport}`.
    public func refusal(transport: DNSTransport) -> String? {
        guard transport.isStream, engine != .command else { return nil }
        if engine == .dnstt {
            guard transport == .tcp else { return nil }
            return "dnstt asks its resolver over UDP, DoT or DoH, not plain TCP; this pair was measured over tcp"
        }
        return "\(engine.rawValue) asks its resolver over UDP only; this pair was measured over \(transport) (use --e2e-engine command with {resolver-url}, e.g. dnstt-client -doh/-dot)"
    }
}

extension Profile {
    /// This profile with one resolver and the given tunnel domain: what an engine pinned to one
    /// scanned pair is started with. The resolver is carried over UDP, or over DoT or DoH when the
    /// target says so (dnstt profiles: `tls`/`https` with the server name and the DoH path).
    public func pinned(to target: ResolverTarget, domain: String) -> Profile {
        var pinned = self
        switch target.transport {
        case .tls: pinned.resolvers = [Resolver(type: "tls", endpoint: target.endpoint, serverName: target.serverName)]
        case .https: pinned.resolvers = [Resolver(type: "https", endpoint: target.endpoint, path: target.path, serverName: target.serverName)]
        case .udp, .tcp: pinned.resolvers = [Resolver(type: "udp", endpoint: target.endpoint)]
        }
        // The CA file is for the TLS of a DoT or DoH resolver: a pair carried over UDP has none.
        if !target.transport.isStream { pinned.engines["dnstt"]?.fields["caFile"] = nil }
        pinned.domain = domain
        return pinned
    }
}
