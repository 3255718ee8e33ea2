import ArgumentParser
import Base
import Logging
import NIOCore
import OSLayer
import ProbeServer

/// `serve --forward`: the responder in front of the user's own tunnel server (`ForwardingServer`).
extension ServeCommand {
    func validateForwarding() throws {
        guard forward != nil else { return }
        guard (1...100_000).contains(forwardMaxFlows) else { throw ValidationError("--forward-max-flows must be 1...100000") }
        guard forwardIdleTimeout > 0, forwardIdleTimeout <= 3600 else {
            throw ValidationError("--forward-idle-timeout must be in (0, 3600] seconds")
        }
        _ = try forwardUpstream()
    }

    /// `--forward ip:port` as a socket address; nil without the flag.
    func forwardUpstream() throws -> SocketAddress? {
        guard let forward else { return nil }
        guard let parsed = try? Endpoint(parsing: forward, defaultPort: nil),
              let address = try? SocketAddress(ipAddress: parsed.host, port: Int(parsed.port)) else {
            throw ValidationError("--forward \(forward): not an address of the form ip:port or [v6]:port")
        }
        if listen.contains(where: { (try? Endpoint(parsing: $0, defaultPort: 53)) == parsed }) {
            throw ValidationError("--forward \(forward) is also a --listen address: the relay would send to itself")
        }
        return address
    }

    func serveForwarding(responder: ProbeResponder, upstream: SocketAddress, addresses: [SocketAddress], tcp: TCPLimits,
                         logger: Logger) async throws {
        let limits = ForwardLimits(maxFlows: forwardMaxFlows, flowIdleTimeout: .milliseconds(Int64(forwardIdleTimeout * 1000)))
        let server = ForwardingServer(responder: responder, upstream: upstream, ratePerSourcePerSecond: rateLimit,
                                      threads: threads, tcp: tcp, limits: limits, logger: logger)
        do {
            _ = try await server.start(listen: addresses)
        } catch {
            await server.stop()
            throw fail("cannot listen on \(listen.joined(separator: ", ")): \(error)", Exit.forSystemFailure(error))
        }
        let shutdown = ServeShutdown(grace: .seconds(5)) { await server.stop() }
        let trap = SignalTrap { shutdown.signal($0) }
        defer { trap.release() }
        logger.notice("serving probes for \(domain) on \(listen.joined(separator: ", ")) (UDP and TCP), everything else to \(forward ?? "")")
        try? await server.wait()
        logger.notice("stopped: \(server.statistics)")
    }
}
