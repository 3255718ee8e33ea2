import Base
import ArgumentParser
import TunnelVerify

/// How `verify` and `resilience` pick and configure the tunnel engine: one option group, so both
/// commands take the same flags and read them the same way.
struct EngineOptions: ParsableArguments {
    @Option(help: "Engine: iodine (default), openvpn, wireguard, command.")
    var engine: String?

    @Option(help: "Engine password (iodine); prefer --password-file.")
    var password: String?

    @Option(help: "File holding the engine password.")
    var passwordFile: String?

    @Option(help: "Key file: OpenVPN static key or WireGuard private key.")
    var keyFile: String?

    @Option(name: .customLong("engine-arg"), help: "Extra argument for the engine (repeatable).")
    var engineArguments: [String] = []

    @Option(help: "With --engine command: the engine's command line; {tun} stands for the TUN device.")
    var engineCommand: String?

    @Option(help: "With --engine command: a regular expression whose match in the engine's log is handshake evidence.")
    var handshakePattern: String?

    @Option(help: "SOCKS5 port of a SOCKS-shaped engine inside the sandbox (host:port): data, exit IP, leak names and the resilience probe flow go through it; without {tun} in --engine-command the engine has no TUN (no TUN routes, no split check).")
    var socks: String?

    /// `--engine`, or the engine the profile's protocol names (iodine when it names none).
    func kind(for profile: Profile) throws -> EngineKind {
        guard let engine else { return EngineKind(rawValue: profile.tunnelProtocol.rawValue) ?? .iodine }
        guard let value = EngineKind(rawValue: engine) else {
            throw fail("--engine \(engine): use iodine, openvpn, wireguard or command", .validationFailure)
        }
        return value
    }

    /// `--socks host:port` (port 1080 when absent).
    func socksEndpoint() throws -> Endpoint? {
        guard let socks else { return nil }
        guard let endpoint = try? Endpoint(parsing: socks, defaultPort: 1080) else { throw fail("--socks \(socks): use ip:port", .validationFailure) }
        return endpoint
    }

    var overrides: EngineOverrides {
        var overrides = EngineOverrides()
        overrides.password = password
        overrides.passwordFile = passwordFile
        overrides.keyFile = keyFile
        overrides.extraArguments = engineArguments
        overrides.command = engineCommand.map { $0.split(separator: " ").map(String.init) } ?? []
        overrides.handshakePattern = handshakePattern
        return overrides
    }
}
