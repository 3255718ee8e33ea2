import ArgumentParser
import DNSWire
import Foundation
import Logging
import NIOCore
import ProbeClient
import ProbeProtocol
import ProbeServer

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the authoritative probe responder for a domain.",
        discussion: """
        Answers the probes of `scan` (and later `path`) for --domain, authenticated with the key in
        --key-file. Delegate the domain to this host (NS record) or use `tunnelprobe lab up`.

        Example:
          tunnelprobe serve --domain t.example.com --key-file probe.key --listen 0.0.0.0:53
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

    @OptionGroup var common: CommonOptions

    func validate() throws {
        guard rateLimit >= 0 else { throw ValidationError("--rate-limit must be 0 or more") }
        guard (1...64).contains(threads) else { throw ValidationError("--threads must be 1...64") }
    }

    func run() async throws {
        let logger = common.logger("tunnelprobe.serve")
        let zone: DNSName
        do { zone = try DNSName(domain) } catch { throw fail("--domain \(domain): \(error)", .validationFailure) }
        let key: ProbeKey
        do { key = try ProbeKey.load(path: keyFile) } catch { throw fail("\(error)", Exit.badInput) }
        var addresses: [SocketAddress] = []
        for entry in listen {
            guard let parsed = try? ResolverList.parse(entry: entry).0.first,
                  let address = try? SocketAddress(ipAddress: parsed.host, port: parsed.port) else {
                throw fail("--listen \(entry): not an address of the form ip:port or [v6]:port", .validationFailure)
            }
            addresses.append(address)
        }
        let ns = try? DNSName(nsName ?? "ns.\(domain)")
        let glue = nsAddress.flatMap { ResolverList.v4Bytes($0) }
            ?? listen.lazy.compactMap { try? ResolverList.parse(entry: $0).0.first }
                .first { !$0.isIPv6 && $0.bytes != [0, 0, 0, 0] }?.bytes
        let responder = ProbeResponder(configuration: .init(zone: zone, key: key,
                                                            nameServers: ns.map { [($0, glue)] } ?? [],
                                                            leakZone: LeakZone()))
        let server = ProbeServer(responder: responder, ratePerSourcePerSecond: rateLimit, threads: threads, logger: logger)
        do {
            _ = try await server.start(listen: addresses)
        } catch {
            await server.stop()
            let code: ExitCode = "\(error)".contains("ermission") ? Exit.noPermission : Exit.environment
            throw fail("cannot listen on \(listen.joined(separator: ", ")): \(error)", code)
        }
        logger.notice("serving \(zone) on \(listen.joined(separator: ", "))")
        let trap = SignalTrap { _ in Task { await server.stop() } }
        defer { trap.release() }
        try? await server.wait()
        logger.notice("stopped: \(server.statistics)")
    }
}
