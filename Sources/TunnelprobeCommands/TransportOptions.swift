import ArgumentParser
import Base
import ProbeClient

/// The flags of the TCP, DoT and DoH transports (a resolver names its transport: `tls://`, `https://`).
struct TransportOptions: ParsableArguments {
    @Option(name: .customLong("doh-method"), help: "How DoH sends queries: post (the message as the body) or get (base64url in the URL; RFC 8484 4.1).")
    var dohMethod: TransportSettings.DoHMethod = .post

    @Option(name: .customLong("tls-ca"), help: "PEM file of the CAs to trust for tls:// and https:// resolvers instead of the system store.")
    var tlsCA: String?

    @Option(name: .customLong("tls-pin"), help: "Base64 SHA-256 of the resolver's public key (SPKI, as kdig +tls-pin): checked instead of the CA and name.")
    var tlsPin: String?

    @Option(name: .customLong("doh-get-uri-limit"), help: "DoH GET: the longest request target sent (path, ?dns= and the base64url query); a longer query fails as uriTooLong. Default 8000 (RFC 9110 4.1); lower it to model a front end.")
    var dohGetURILimit: Int = 8000

    @Option(name: .customLong("connections-per-resolver"), help: "At most this many TCP/TLS/HTTPS connections to one resolver; queries are pipelined on them.")
    var connectionsPerResolver: Int = 2

    func validate() throws {
        guard (16...65_536).contains(dohGetURILimit) else {
            throw ValidationError("--doh-get-uri-limit: 16 to 65536 characters")
        }
        guard (1...64).contains(connectionsPerResolver) else {
            throw ValidationError("--connections-per-resolver: 1 to 64")
        }
    }

    var settings: TransportSettings {
        TransportSettings(dohMethod: dohMethod,
                          caFile: tlsCA, pin: tlsPin, connectionsPerResolver: connectionsPerResolver,
                          dohGetURILimit: dohGetURILimit)
    }

    /// Gives `prober` the list's TCP, TLS and HTTPS resolvers and the engine that reaches them; nil
    /// when every resolver is UDP.
    func attach(to prober: inout Prober, list: ResolverList, seed: UInt64) throws -> ResolverTransports? {
        try attach(to: &prober, targets: list.targets, seed: seed)
    }

    /// Gives `prober` these TCP, TLS and HTTPS resolvers (by endpoint) and the engine that reaches
    /// them; nil when there are none.
    func attach(to prober: inout Prober, targets: [Endpoint: ResolverTarget], seed: UInt64) throws -> ResolverTransports? {
        guard !targets.isEmpty else { return nil }
        let transports: ResolverTransports
        do { transports = try ResolverTransports(settings: settings, seed: seed) } catch {
            throw fail("\(error)", Exit.badInput)
        }
        prober.targets = targets
        prober.transports = transports
        return transports
    }
}
