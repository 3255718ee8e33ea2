import Base
import ArgumentParser
import TunnelVerify
import Results

/// How `verify` and `resilience` pick and configure the tunnel engine: one option group, so both
/// commands take the same flags and read them the same way.
struct EngineOptions: ParsableArguments {
    @Option(help: "Engine: iodine, masterdnsvpn, dnstt, openvpn, wireguard, command (default: the one the profile's protocol names; never another protocol's).")
    var engine: EngineKind?

    @Option(help: "The engine program, instead of looking it up on PATH (MasterDnsVPN: the Go edition's client, or the Python edition's client.py or the directory holding it; dnstt: dnstt-client).")
    var enginePath: String?

    @Option(help: "MasterDnsVPN's Python edition (--engine-path client.py): the interpreter that runs it, e.g. a virtualenv's bin/python (default: python3 on PATH).")
    var enginePython: String?

    @Option(help: "Seconds from the TUN phase's start until the engine's own handshake evidence (MasterDnsVPN: a session id and an accepted resolver); default --deadline.")
    var handshakeDeadline: Double?

    @Option(help: "Engine password (iodine); prefer --password-file.")
    var password: String?

    @Option(help: "File holding the engine password.")
    var passwordFile: String?

    @Option(help: "Key file: OpenVPN static key, WireGuard private key, or dnstt server's public key (dnstt-client -pubkey-file).")
    var keyFile: String?

    @Option(name: .customLong("engine-arg"), help: "Extra argument for the engine (repeatable); MasterDnsVPN's Python edition takes none, so for it each is a config line KEY=VALUE (LOG_LEVEL=\"DEBUG\").")
    var engineArguments: [String] = []

    @Option(help: "With --engine command: the engine's command line; {tun} stands for the TUN device.")
    var engineCommand: String?

    @Option(help: "With --engine command: a regular expression whose match in the engine's log is handshake evidence.")
    var handshakePattern: String?

    @Option(help: "SOCKS5 port of a SOCKS-shaped engine inside the sandbox (host:port): data, exit IP, leak names and the resilience probe flow go through it; without {tun} in --engine-command the engine has no TUN (no TUN routes, no split check).")
    var socks: String?

    /// `--engine`, or the engine the profile's protocol names. A protocol verify has no engine for
    /// is one line and exit 69; `--engine` naming another protocol's engine is a usage error (a
    /// profile never runs another protocol's engine; `command` runs any).
    func kind(for profile: Profile) throws -> EngineKind {
        try Self.kind(named: engine, for: profile)
    }

    /// The rule of `kind(for:)` for any flag that names an engine (`verify --engine`, `scan --e2e-engine`).
    static func kind(named engine: EngineKind?, for profile: Profile) throws -> EngineKind {
        let own = EngineKind.forProtocol(profile.tunnelProtocol)
        guard let value = engine else {
            guard let own else {
                throw fail("protocol \(profile.tunnelProtocol.rawValue): verify has no \(profile.tunnelProtocol.rawValue) engine (\(Self.missingEngine(profile.tunnelProtocol))); run it with --engine command", Exit.environment)
            }
            return own
        }
        if value != .command, value != own {
            throw fail("--engine \(value.rawValue) cannot run a \(profile.tunnelProtocol.rawValue) profile (protocol \"\(profile.tunnelProtocol.rawValue)\"): a profile runs only its own protocol's engine\(own.map { " (\($0.rawValue))" } ?? ""), or --engine command", .validationFailure)
        }
        return value
    }

    static func missingEngine(_ tunnelProtocol: Profile.TunnelProtocol) -> String {
        switch tunnelProtocol {
        case .slipstream: "it needs slipstream-client, built from github.com/EndPositive/slipstream, which verify does not drive yet"
        default: "no engine"
        }
    }

    /// `--handshake-deadline` checked.
    func handshakeDuration() throws -> Duration? {
        guard let handshakeDeadline else { return nil }
        guard handshakeDeadline > 0, handshakeDeadline <= 600 else { throw fail("--handshake-deadline must be in (0, 600] seconds", .validationFailure) }
        return .milliseconds(Int64(handshakeDeadline * 1000))
    }

    /// `--socks host:port` (port 1080 when absent).
    func socksEndpoint() throws -> Endpoint? {
        guard let socks else { return nil }
        guard let endpoint = try? Endpoint(parsing: socks, defaultPort: 1080) else { throw fail("--socks \(socks): use ip:port", .validationFailure) }
        return endpoint
    }

    /// The flags as overrides for `kind`, `--socks`, `--handshake-deadline`, `--engine-python` and
    /// the Python edition's `--engine-arg` config lines checked.
    func checkedOverrides(for kind: EngineKind) throws -> EngineOverrides {
        var overrides = self.overrides
        overrides.socks = try socksEndpoint()
        overrides.handshakeDeadline = try handshakeDuration()
        try Self.checkPythonEdition(kind: kind, enginePath: enginePath, python: enginePython, arguments: engineArguments,
                                    flags: ("--engine-python", "--engine-arg"))
        return overrides
    }

    /// `--engine-python` only with MasterDnsVPN's Python edition, whose `--engine-arg`s must be
    /// config lines; one line and exit 64 otherwise (also for `scan --e2e-*`, hence the names).
    static func checkPythonEdition(kind: EngineKind, enginePath: String?, python: String?, arguments: [String],
                                   flags: (python: String, argument: String)) throws {
        let edition: MasterDnsVPNEdition? = kind == .masterdnsvpn ? MasterDnsVPNEdition.of(enginePath: enginePath) : nil
        if let python, edition != .python {
            throw fail("\(flags.python) \(python): it runs MasterDnsVPN's Python edition only (give its client.py or directory as the engine path)", .validationFailure)
        }
        guard edition == .python else { return }
        if case .failure(let problem) = MasterDnsVPNConfig.pythonSettings(arguments) {
            throw fail("\(flags.argument) \(problem)", .validationFailure)
        }
    }

    var overrides: EngineOverrides {
        var overrides = EngineOverrides()
        overrides.enginePath = enginePath
        overrides.python = enginePython
        overrides.password = password
        overrides.passwordFile = passwordFile
        overrides.keyFile = keyFile
        overrides.extraArguments = engineArguments
        overrides.command = engineCommand.map { $0.split(separator: " ").map(String.init) } ?? []
        overrides.handshakePattern = handshakePattern
        return overrides
    }
}
