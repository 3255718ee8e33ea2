import Base
import ArgumentParser
import DNSWire
import Foundation
import Logging
import NIOCore
import OSLayer
import ProbeClient
import ProbeProtocol
import ProbeServer

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the authoritative probe responder for a domain.",
        discussion: """
        Answers the probes of `scan` and `path` for --domain, authenticated with the key in
        --key-file, over UDP and over TCP (RFC 1035 4.2.2, RFC 7766) on every --listen address.
        Delegate the domain to this host (NS record) or use `tunnelprobe lab up`.

        --edns honor (the default) truncates a UDP answer larger than the EDNS size the resolver
        advertised, as authoritative servers and dnstt's server do; the resolver then retries over
        TCP, and `scan` names that advertised size as the limit, a figure every engine can use.
        --edns ignore answers authenticated probes whole whatever the advertised size, as
        MasterDnsVPN's server does, and so measures what such a server gets through.
        Over UDP an answer to anything but an authenticated probe is never larger than the query
        (a larger one goes out with TC and the resolver asks again over TCP): no amplification.

        --forward ip:port puts the responder in front of the tunnel server you already run under
        the same domain (moved to that port): only authenticated probes and the apex SOA are
        answered here; every other query is relayed to it unchanged and its answers come back
        unchanged, over UDP (one upstream socket per client address and port) and TCP. The tunnel
        server then sees the relay's address instead of the resolver's (README, "Measuring through
        your own tunnel server").

        Example:
          tunnelprobe serve --domain t.example.com --key-file probe.key --listen 0.0.0.0:53
          tunnelprobe serve --domain t.example.com --key-file probe.key --forward 127.0.0.1:5300
        """
    )

    @Option(help: "The zone this responder is authoritative for.")
    var domain: String

    @Option(help: "File with the pre-shared key as hexadecimal text (at least 16 bytes).")
    var keyFile: String

    @Option(help: "Address to listen on, ip:port or [v6]:port (repeatable).")
    var listen: [String] = ["0.0.0.0:53"]

    @Option(help: "Name server published at the apex (default ns.<domain>).")
    var nsName: String?

    @Option(help: "IPv4 glue for the name server (default: the first specific IPv4 listen address).")
    var nsAddress: String?

    @Option(help: "Answers per second allowed to one source address (0 = no limit).")
    var rateLimit: Double = 5000

    @Option(help: "Event-loop threads.")
    var threads: Int = 1

    @Option(help: "honor: truncate UDP answers at the resolver's advertised EDNS size (default, as authoritative servers do); ignore: answer probes whole (as MasterDnsVPN's server does).")
    var edns: ProbeResponder.EDNSMode = .honor

    @Option(help: "TCP connections open at once over all listen addresses (RFC 7766 6.2.2).")
    var tcpMaxConnections: Int = TCPLimits.standard.maxConnections

    @Option(help: "Seconds a TCP connection may stay without a query before it is closed (RFC 7766 6.2.3).")
    var tcpIdleTimeout: Double = 10

    @Option(help: "Seconds a TCP query that started arriving may take to complete.")
    var tcpReadTimeout: Double = 5

    @Option(help: ArgumentHelp("Put the responder in front of the tunnel server at ip:port: answer only authenticated probes (and the apex SOA), relay every other query to it unchanged, both ways, UDP and TCP (README, \"Measuring through your own tunnel server\"). The server sees the relay's address, not the resolver's.", valueName: "ip:port"))
    var forward: String?

    @Option(help: "With --forward: client addresses (ip and port) relayed at once, each with its own upstream socket.")
    var forwardMaxFlows: Int = ForwardLimits.standard.maxFlows

    @Option(help: "With --forward: seconds a relayed client address may stay silent before its upstream socket is closed.")
    var forwardIdleTimeout: Double = 10

    @OptionGroup var common: CommonOptions

    func validate() throws {
        try validateForwarding()
        guard rateLimit >= 0 else { throw ValidationError("--rate-limit must be 0 or more") }
        guard (1...64).contains(threads) else { throw ValidationError("--threads must be 1...64") }
        guard (1...1_000_000).contains(tcpMaxConnections) else { throw ValidationError("--tcp-max-connections must be 1...1000000") }
        guard tcpIdleTimeout > 0, tcpIdleTimeout <= 3600 else { throw ValidationError("--tcp-idle-timeout must be in (0, 3600] seconds") }
        guard tcpReadTimeout > 0, tcpReadTimeout <= 3600 else { throw ValidationError("--tcp-read-timeout must be in (0, 3600] seconds") }
    }

    func run() async throws {
        let logger = common.logger("tunnelprobe.serve")
        let zone: DNSName
        do { zone = try DNSName(domain) } catch { throw fail("--domain \(domain): \(error)", .validationFailure) }
        let key = try loadProbeKey(keyFile)
        var addresses: [SocketAddress] = []
        for entry in listen {
            guard let parsed = try? Endpoint(parsing: entry, defaultPort: 53),
                  let address = try? SocketAddress(ipAddress: parsed.host, port: Int(parsed.port)) else {
                throw fail("--listen \(entry): not an address of the form ip:port or [v6]:port", .validationFailure)
            }
            addresses.append(address)
        }
        let ns = try? DNSName(nsName ?? "ns.\(domain)")
        let glue = nsAddress.flatMap { IPAddress($0) }.flatMap { $0.version == 4 ? $0.bytes : nil }
            ?? listen.lazy.compactMap { try? Endpoint(parsing: $0, defaultPort: 53) }
                .first { !$0.isIPv6 && $0.address != .v4(0) }?.address.bytes
        let responder = ProbeResponder(configuration: .init(zone: zone, key: key,
                                                            nameServers: ns.map { [($0, glue)] } ?? [],
                                                            leakZone: LeakZone(),
                                                            ednsMode: edns))
        let limits = TCPLimits(maxConnections: tcpMaxConnections,
                               idleTimeout: .milliseconds(Int64(tcpIdleTimeout * 1000)),
                               readTimeout: .milliseconds(Int64(tcpReadTimeout * 1000)))
        if let upstream = try forwardUpstream() {
            try await serveForwarding(responder: responder, upstream: upstream, addresses: addresses, tcp: limits, logger: logger)
            return
        }
        let server = ProbeServer(responder: responder, ratePerSourcePerSecond: rateLimit, threads: threads,
                                 tcp: limits, logger: logger)
        do {
            _ = try await server.start(listen: addresses)
        } catch {
            await server.stop()
            throw fail("cannot listen on \(listen.joined(separator: ", ")): \(error)", Exit.forSystemFailure(error))
        }
        let shutdown = ServeShutdown(grace: .seconds(5)) { await server.stop() }
        let trap = SignalTrap { shutdown.signal($0) }
        defer { trap.release() }
        // Said once SIGTERM/SIGINT stop it in order: a supervisor (or a test) that waits for this line
        // may signal at once.
        logger.notice("serving \(zone) on \(listen.joined(separator: ", ")) (UDP and TCP, --edns \(edns.rawValue))")
        try? await server.wait()
        logger.notice("stopped: \(server.statistics)")
    }
}
