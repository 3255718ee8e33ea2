public import Base
import Foundation

/// The engines `verify` can start, all real programs.
public enum EngineKind: String, Sendable, Hashable, CaseIterable, Codable {
    /// iodine: a TUN-native DNS tunnel (Debian `iodine`).
    case iodine
    /// MasterDnsVPN's client, Go edition or Python edition (`MasterDnsVPNEdition`, told by
    /// `--engine-path`): SOCKS-shaped, started with a config written from a `masterdns` profile
    /// (`MasterDnsVPNConfig`); in no package registry.
    case masterdnsvpn
    /// dnstt's client (`dnstt-client`, built from its Go source; in no package registry): a TCP
    /// listener carried as smux streams to the server, whose SOCKS5 upstream makes it verify's
    /// SOCKS endpoint (`DnsttClient`); UDP, DoT or DoH to the profile's first resolver.
    case dnstt
    /// OpenVPN in static-key point-to-point mode (Debian `openvpn`).
    case openvpn
    /// WireGuard in user space: wireguard-go configured with `wg` (Debian `wireguard-go`, `wireguard-tools`).
    case wireguard
    /// Any program given with `--engine-command`, with handshake evidence from `--handshake-pattern`.
    case command
}

extension EngineKind {
    /// The engine of a profile's protocol; nil for a protocol verify has no engine for
    /// (slipstream). Never another protocol's engine.
    public static func forProtocol(_ tunnelProtocol: Profile.TunnelProtocol) -> EngineKind? {
        switch tunnelProtocol {
        case .iodine: .iodine
        case .masterdns: .masterdnsvpn
        case .openvpn: .openvpn
        case .wireguard: .wireguard
        case .custom: .command
        case .dnstt: .dnstt
        case .slipstream: nil
        }
    }
}

/// Flags that override or complete the profile's engine section.
public struct EngineOverrides: Sendable, Hashable {
    public var password: String?
    public var passwordFile: String?
    public var keyFile: String?
    public var extraArguments: [String] = []
    /// `--engine-command`: argv with `{tun}` standing for the TUN device's name.
    public var command: [String] = []
    /// `--handshake-pattern`: a regular expression matched against the engine's log.
    public var handshakePattern: String?
    /// `--engine-path`: the engine program, instead of looking it up on PATH (MasterDnsVPN: the Go
    /// edition's client, or the Python edition's client.py or its directory).
    public var enginePath: String?
    /// `--engine-python`: the interpreter that runs MasterDnsVPN's Python edition (else `python3`).
    public var python: String?
    /// `--socks`: where a SOCKS-shaped engine listens (MasterDnsVPN's LISTEN_IP/LISTEN_PORT).
    public var socks: Endpoint?
    /// `--handshake-deadline`: how long the TUN and the handshake may take together (else `--deadline`).
    public var handshakeDeadline: Duration?
    public init() {}
}

/// What the engine's log or state says about the handshake so far.
enum HandshakeState: Sendable, Hashable {
    case pending
    case done(evidence: String)
    case failed(reason: String, words: String)
}

/// One engine, ready to start in a sandbox: its argv, its carrier, and how to read its progress.
struct Engine: Sendable {
    var kind: EngineKind
    var program: String
    var package: String
    /// Where the carrier goes: these addresses are excluded from the tunnel's routes.
    var carriers: [Endpoint]
    /// For DNS carriers: only queries under this domain are the carrier.
    var carrierDomain: String?
    var handshakeMarker: String?
    var handshakePattern: String?
    /// Log texts that end the handshake with a named reason.
    var failureMarkers: [(text: String, reason: String)]
    /// Texts in the log that, if seen when the deadline passes, explain the timeout.
    var timeoutHints: [(text: String, reason: String)]
    /// Like `timeoutHints`, but only when the log's last line says it: a stage every session passes
    /// through, where the engine is stuck only if it is still there.
    var stuckAtHints: [(text: String, reason: String)] = []
    var settings: Profile.EngineSettings
    var secret: String?
    var extraArguments: [String]
    var commandTemplate: [String]
    var environment: [String] = []
    /// MasterDnsVPN: the profile normalized into the client's config.
    var masterdns: MasterDnsVPNConfig?
    /// Where the program is when a flag says (`--engine-path`; for MasterDnsVPN's Python edition
    /// the interpreter, `--engine-python`), and the flag's name for the error that says it is not there.
    var programPath: (path: String, flag: String)?
    /// MasterDnsVPN's Python edition: what `--engine-path` names (client.py or its directory),
    /// located with the other programs (`EngineRunConfiguration.prepared`).
    var pythonScriptPath: String?
    var pythonScript: MasterDnsVPNPythonScript?
    /// dnstt: the profile normalized into the client's command line.
    var dnstt: DnsttClient?

    /// The MasterDnsVPN edition, when the engine is MasterDnsVPN.
    var edition: MasterDnsVPNEdition? { masterdns?.edition }

    /// Builds the engine from the profile's section and the flags; problems name the field.
    static func make(_ kind: EngineKind, profile: Profile, overrides: EngineOverrides) throws(ProfileError) -> Engine {
        var settings = profile.engines[kind.rawValue] ?? Profile.EngineSettings()
        if let value = overrides.password { settings.password = value }
        if let value = overrides.passwordFile { settings.passwordFile = value }
        if let value = overrides.keyFile { settings.keyFile = value }
        let extra = settings.extraArguments + overrides.extraArguments
        var engine = Engine(kind: kind, program: "", package: "", carriers: [], carrierDomain: nil, handshakeMarker: nil,
                            handshakePattern: nil, failureMarkers: [], timeoutHints: [], settings: settings, secret: nil,
                            extraArguments: extra, commandTemplate: [])
        engine.programPath = overrides.enginePath.map { ($0, "--engine-path") }
        switch kind {
        case .iodine:
            engine.program = "iodine"
            engine.package = "iodine"
            guard let domain = profile.domain else { throw ProfileError(field: "domain", "is missing (iodine needs its tunnel domain)") }
            guard let resolver = profile.resolvers.first else { throw ProfileError(field: "resolvers", "iodine needs a resolver") }
            guard resolver.endpoint.port == 53 else {
                throw ProfileError(field: "resolvers[0].address", "iodine sends to port 53 only, not \(resolver.endpoint.port)")
            }
            engine.carriers = [resolver.endpoint]
            engine.carrierDomain = domain
            engine.secret = try secret(settings, section: "iodine", field: "password")
            engine.handshakeMarker = "Connection setup complete"
            engine.failureMarkers = [
                ("Bad password", "bad password"),
                ("BADIP", "the server refused this client's address"),
                ("BADLEN", "the server rejected the query length"),
                ("Got SERVFAIL as reply", "the resolver could not reach the tunnel server (SERVFAIL)"),
                ("Got NXDOMAIN as reply", "the resolver says the tunnel domain does not exist (NXDOMAIN)"),
                ("Got REFUSED as reply", "the resolver refused the queries (REFUSED)"),
                // iodined 0.7 has 16 user slots and frees one only a minute after its client's last
                // query (there is no logout), so quick restarts against one server can run out.
                ("Server full", "the server has no free user slot (iodined frees a slot a minute after its client's last query)"),
            ]
            engine.timeoutHints = [
                ("Retrying version check", "resolver unreachable: no answer to the version check"),
                ("No reply from nameserver", "resolver unreachable"),
                ("Version ok", "handshake started but the session was never set up"),
            ]
            engine.stuckAtHints = [
                ("Autodetecting DNS query type", "resolver unreachable: no answer to iodine's query-type detection"),
            ]
        case .masterdnsvpn:
            let edition = MasterDnsVPNEdition.of(enginePath: overrides.enginePath)
            let config = try MasterDnsVPNConfig.normalize(profile, socks: overrides.socks, edition: edition, arguments: extra)
            switch edition {
            case .go:
                engine.program = "masterdnsvpn-client"
                engine.package = Self.masterDnsVPNPackage
            case .python:
                // The script is run by an interpreter; its arguments became config lines.
                engine.program = "python3"
                engine.package = "python3"
                engine.programPath = overrides.python.map { ($0, "--engine-python") }
                engine.pythonScriptPath = overrides.enginePath
                engine.extraArguments = []
                // Its log lines reach the file as they are written (print() is block-buffered on a file).
                engine.environment = ["PYTHONUNBUFFERED=1"]
            }
            engine.masterdns = config
            engine.carriers = config.resolvers
            engine.carrierDomain = config.domain
            engine.secret = try secret(settings, section: "masterdnsvpn", field: "password")
        case .dnstt:
            let client = try DnsttClient.normalize(profile, listener: overrides.socks, settings: settings)
            engine.program = "dnstt-client"
            engine.package = DnsttClient.package
            engine.dnstt = client
            engine.carriers = [client.resolver]
            engine.carrierDomain = client.domain
            engine.environment = client.environment
        case .openvpn:
            engine.program = "openvpn"
            engine.package = "openvpn"
            guard let remoteText = settings.fields["remote"] else { throw ProfileError(field: "openvpn.remote", "is missing") }
            guard let remote = try? Endpoint(parsing: remoteText, defaultPort: 1194) else {
                throw ProfileError(field: "openvpn.remote", "\"\(remoteText)\" is not ip, ip:port or [v6]:port")
            }
            for field in ["localAddress", "remoteAddress"] {
                guard let value = settings.fields[field] else { throw ProfileError(field: "openvpn.\(field)", "is missing") }
                guard IPAddress(value)?.version == 4 else { throw ProfileError(field: "openvpn.\(field)", "\"\(value)\" is not an IPv4 address") }
            }
            guard let key = settings.keyFile else { throw ProfileError(field: "openvpn.keyFile", "is missing (the static key)") }
            guard FileManager.default.isReadableFile(atPath: key) else { throw ProfileError(field: "openvpn.keyFile", "cannot read \(key)") }
            if let direction = settings.fields["direction"], direction != "0", direction != "1" {
                throw ProfileError(field: "openvpn.direction", "must be 0 or 1")
            }
            engine.carriers = [remote]
            engine.handshakeMarker = "Initialization Sequence Completed"
            engine.failureMarkers = [("Cannot load inline static key file", "the static key file is malformed")]
            engine.timeoutHints = [
                ("Authenticate/Decrypt packet error", "bad key: the peer's packets fail HMAC authentication"),
                ("Connection refused", "the server port is closed"),
            ]
        case .wireguard:
            engine.program = "wireguard-go"
            engine.package = "wireguard-go"
            guard let endpointText = settings.fields["endpoint"] else { throw ProfileError(field: "wireguard.endpoint", "is missing") }
            guard let endpoint = try? Endpoint(parsing: endpointText, defaultPort: 51820) else {
                throw ProfileError(field: "wireguard.endpoint", "\"\(endpointText)\" is not ip, ip:port or [v6]:port")
            }
            guard let address = settings.fields["address"], address.contains("/"),
                  IPAddress(address.split(separator: "/")[0]) != nil else {
                throw ProfileError(field: "wireguard.address", "is missing or not ip/prefix")
            }
            guard let peer = settings.fields["peerPublicKey"], peer.count == 44, peer.hasSuffix("=") else {
                throw ProfileError(field: "wireguard.peerPublicKey", "is missing or not a base64 key of 32 bytes")
            }
            guard let key = settings.keyFile else { throw ProfileError(field: "wireguard.keyFile", "is missing (the private key)") }
            guard FileManager.default.isReadableFile(atPath: key) else { throw ProfileError(field: "wireguard.keyFile", "cannot read \(key)") }
            engine.carriers = [endpoint]
            engine.environment = ["LOG_LEVEL=verbose"]
            engine.timeoutHints = [
                ("Handshake did not complete", "no handshake response: wrong key or the peer is unreachable"),
                ("Failed to send handshake initiation", "cannot send the handshake initiation"),
            ]
        case .command:
            guard let first = overrides.command.first else {
                throw ProfileError(field: "--engine-command", "is required with --engine command")
            }
            guard let pattern = overrides.handshakePattern, (try? Regex(pattern)) != nil else {
                throw ProfileError(field: "--handshake-pattern", "is required with --engine command and must be a regular expression")
            }
            engine.program = first
            engine.package = "it is the program --engine-command names"
            engine.commandTemplate = overrides.command
            engine.handshakePattern = pattern
            engine.carriers = profile.resolvers.map(\.endpoint)
            engine.carrierDomain = profile.domain
        }
        return engine
    }

    /// dnstt-client accepts local connections only once its Noise handshake is done and logs
    /// `begin stream` for each (`DnsttLog`): one connection made right after launch, and closed at
    /// once (it waits in the listen queue), turns the handshake into a log line. Retried until the
    /// client listens (at most 3 s, or the deadline); a connection that never comes leaves the
    /// handshake pending, so the run times out with the log's reason.
    static func knock(_ listener: Endpoint, sandbox: Sandbox, deadline: ContinuousClock.Instant) async {
        let clock = ContinuousClock()
        // The client opens its listener first thing (dnstt-client/main.go run): a few seconds is plenty.
        let end = min(deadline, clock.now + .seconds(3))
        while clock.now < end {
            let connected = (try? await NamespaceThread.run(in: sandbox.namespacePath) { () -> Bool in
                guard case .success(let fd) = SandboxProbes.connectTCP(host: listener.host, port: Int(listener.port), timeoutMs: 500) else { return false }
                fd.close()
                return true
            }) ?? false
            if connected || Task.isCancelled { return }
            try? await clock.sleep(for: .milliseconds(100))
        }
    }

    /// What to install when no MasterDnsVPN client is found (it is in no package registry).
    static let masterDnsVPNPackage = "the MasterDnsVPN client is in no package registry: build the Go edition's cmd/client (github.com/masterking32/MasterDnsVPN) and put it on PATH as masterdnsvpn-client, or give --engine-path (the Go client, or the Python edition's client.py)"

    static func secret(_ settings: Profile.EngineSettings, section: String, field: String) throws(ProfileError) -> String {
        if let password = settings.password, !password.isEmpty { return password }
        if let file = settings.passwordFile {
            guard let text = Host.readText(file) else { throw ProfileError(field: "\(section).passwordFile", "cannot read \(file)") }
            let password = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !password.isEmpty else { throw ProfileError(field: "\(section).passwordFile", "\(file) is empty") }
            return password
        }
        throw ProfileError(field: "\(section).\(field)", "is missing (or give \(section).passwordFile, --password, --password-file)")
    }

    /// Whether the engine attaches to the sandbox's TUN. Every engine does but a SOCKS-shaped one:
    /// `--engine command` given a SOCKS5 port (`--socks`) and no `{tun}` in its command line. Such
    /// an engine is a host inside the sandbox that offers a proxy; the sandbox keeps the routes of
    /// the device's network and traffic crosses the tunnel only through the proxy.
    func usesTUN(socks: Endpoint?) -> Bool {
        kind != .command || socks == nil || commandTemplate.contains { $0.contains("{tun}") }
    }

    /// Whether data crosses the tunnel through the TUN (its counters must move in the data phase).
    /// MasterDnsVPN's TUN is the sandbox's claim on every route (the seed's packet tunnel): verify's
    /// probes go through the engine's SOCKS5 and DNS listeners, and nothing reads the TUN, so
    /// whatever else is sent into it is dropped, never carried or leaked.
    func carriesDataOnTUN(socks: Endpoint?) -> Bool {
        kind != .masterdnsvpn && kind != .dnstt && usesTUN(socks: socks)
    }

    /// Where MasterDnsVPN's files go in the sandbox's directory: the Go edition's config, or the
    /// Python edition's private copy with its config beside client.py.
    func masterDnsVPNDirectory(_ sandbox: Sandbox) -> String {
        sandbox.directory + (edition == .python ? "/masterdnsvpn-python" : "/masterdnsvpn")
    }

    /// The files the engine reads, written into the sandbox's directory before each launch
    /// (MasterDnsVPN's client_config.toml and resolver file, root-only: the key is in it). The
    /// Python edition's script directory is copied there first, once per run.
    func prepare(sandbox: Sandbox) throws(VerifyError) {
        guard let config = masterdns else { return }
        let directory = masterDnsVPNDirectory(sandbox)
        if let pythonScript, !Host.exists(directory + "/" + MasterDnsVPNPythonScript.scriptName) {
            try pythonScript.copy(into: directory)
        }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
            let configPath = directory + "/" + MasterDnsVPNConfig.configFileName
            try Data(config.toml(key: secret ?? "").utf8).write(to: URL(fileURLWithPath: configPath))
            try Data(config.resolverFile.utf8).write(to: URL(fileURLWithPath: directory + "/" + MasterDnsVPNConfig.resolverFileName))
            chmod(configPath, 0o600)
        } catch {
            throw VerifyError(.sandboxFailed, "cannot write the MasterDnsVPN config in \(directory): \(error)")
        }
    }

    /// What can only be checked by running something, before anything is built: the Python
    /// edition's interpreter and modules.
    func checkRuntime(tools: Tools) async throws(VerifyError) {
        guard edition == .python, let python = tools.engine else { return }
        try await MasterDnsVPNPythonScript.checkInterpreter(python)
    }

    /// The engine's argv inside the sandbox (after `ip netns exec`).
    func argv(program path: String, sandbox: Sandbox) -> [String] {
        let tun = sandbox.tunDevice
        let env = environment.isEmpty ? [] : ["/usr/bin/env"] + environment
        switch kind {
        case .masterdnsvpn:
            let directory = masterDnsVPNDirectory(sandbox)
            if edition == .python {
                // The copy's client.py: it reads its two files from its own directory.
                return env + [path, directory + "/" + MasterDnsVPNPythonScript.scriptName]
            }
            return env + [path, "-config", directory + "/" + MasterDnsVPNConfig.configFileName,
                          "-resolvers", directory + "/" + MasterDnsVPNConfig.resolverFileName] + extraArguments
        case .dnstt:
            return env + [path] + (dnstt?.arguments(extra: extraArguments) ?? extraArguments)
        case .iodine:
            // -r: never try raw UDP to the server, the session must go through the resolver.
            return env + [path, "-f", "-r", "-P", secret ?? "", "-d", tun] + extraArguments
                + [carriers[0].host, carrierDomain ?? ""]
        case .openvpn:
            let remote = carriers[0]
            return env + [path, "--dev", tun, "--dev-type", "tun", "--remote", remote.host, "\(remote.port)",
                          "--proto", remote.isIPv6 ? "udp6" : "udp", "--nobind",
                          "--secret", settings.keyFile ?? "", settings.fields["direction"] ?? "1",
                          "--cipher", settings.fields["cipher"] ?? "AES-256-CBC",
                          "--ifconfig", settings.fields["localAddress"] ?? "", settings.fields["remoteAddress"] ?? "",
                          "--ping", "1", "--verb", "3"] + extraArguments
        case .wireguard:
            return env + [path, "-f", tun] + extraArguments
        case .command:
            return env + [path] + commandTemplate.dropFirst().map { $0.replacingOccurrences(of: "{tun}", with: tun) } + extraArguments
        }
    }

    /// Steps after launch that configure the engine from outside (wireguard-go takes its keys and
    /// peer through `wg`).
    func configure(sandbox: Sandbox, tools: Tools, deadline: ContinuousClock.Instant) async throws(VerifyError) {
        if kind == .masterdnsvpn || kind == .dnstt {
            // The packet tunnel's own address (the seed's NEIPv4Settings): the engine has no TUN.
            try await Host.check([tools.ip, "-n", sandbox.namespace, "address", "replace", MasterDnsVPNConfig.tunAddress, "dev", sandbox.tunDevice])
            try await Host.check([tools.ip, "-n", sandbox.namespace, "link", "set", sandbox.tunDevice, "up"])
            if let client = dnstt { await Self.knock(client.listener, sandbox: sandbox, deadline: deadline) }
            return
        }
        guard kind == .wireguard else { return }
        let socket = "/var/run/wireguard/\(sandbox.tunDevice).sock"
        let clock = ContinuousClock()
        while !Host.exists(socket) {
            guard clock.now < deadline else { throw VerifyError(.sandboxFailed, "wireguard-go made no control socket \(socket)") }
            try? await clock.sleep(for: .milliseconds(50))
        }
        let wg = try Host.require("wg", package: "wireguard-tools")
        let endpoint = carriers[0]
        let set = [tools.ip, "netns", "exec", sandbox.namespace, wg, "set", sandbox.tunDevice,
                   "private-key", settings.keyFile ?? "",
                   "peer", settings.fields["peerPublicKey"] ?? "", "endpoint", endpoint.description,
                   "allowed-ips", "0.0.0.0/0,::/0", "persistent-keepalive", settings.fields["persistentKeepalive"] ?? "1"]
        // After a restart the killed wireguard-go's socket file can still be there before the new
        // process listens on it; `wg` then falls back to the kernel's netlink and says "Protocol not
        // supported". The socket existing is not the engine being ready: retry until the deadline.
        while true {
            do throws(VerifyError) {
                try await Host.check(set)
                break
            } catch {
                guard clock.now < deadline else { throw error }
                try? await clock.sleep(for: .milliseconds(100))
            }
        }
        try await Host.check([tools.ip, "-n", sandbox.namespace, "address", "replace", settings.fields["address"] ?? "", "dev", sandbox.tunDevice])
        try await Host.check([tools.ip, "-n", sandbox.namespace, "link", "set", sandbox.tunDevice, "up"])
    }

    /// Reads the log (and for WireGuard the peer state) for handshake evidence or failure words.
    func handshake(log: String, sandbox: Sandbox, tools: Tools) async -> HandshakeState {
        if kind == .masterdnsvpn {
            switch MasterDnsVPNLog(log, edition: edition ?? .go).handshake {
            case .pending: return .pending
            case .done(let evidence, _): return .done(evidence: evidence)
            }
        }
        if kind == .dnstt { return DnsttLog(log).handshake }
        for marker in failureMarkers {
            if let line = log.split(whereSeparator: \.isNewline).first(where: { $0.contains(marker.text) }) {
                return .failed(reason: marker.reason, words: String(line))
            }
        }
        if let marker = handshakeMarker,
           let line = log.split(whereSeparator: \.isNewline).first(where: { $0.contains(marker) }) {
            return .done(evidence: String(line))
        }
        if let pattern = handshakePattern, let regex = try? Regex(pattern),
           let line = log.split(whereSeparator: \.isNewline).first(where: { $0.contains(regex) }) {
            return .done(evidence: String(line))
        }
        if kind == .wireguard, let wg = Host.locate("wg"),
           let outcome = try? await Host.run([tools.ip, "netns", "exec", sandbox.namespace, wg, "show", sandbox.tunDevice, "latest-handshakes"]) {
            for line in outcome.output.split(separator: "\n") {
                let fields = line.split(whereSeparator: \.isWhitespace)
                if fields.count == 2, let stamp = UInt64(fields[1]), stamp > 0 {
                    return .done(evidence: "wg latest-handshakes \(fields[0]) \(stamp)")
                }
            }
        }
        return .pending
    }

    /// Why data may not cross after a done handshake, from the engine's settings and log (iodine
    /// behind a QNAME-minimising resolver, `IodineNames`); nil when nothing is known.
    func dataStallHint(log: String) -> String? {
        if kind == .dnstt { return dnstt?.transport == .udp ? DnsttLog.truncationHint : nil }
        guard kind == .iodine, let domain = carrierDomain else { return nil }
        return IodineNames(domain: domain, arguments: extraArguments).dataStallHint(log: log)
    }

    /// What the engine's log says about the resolver that explains failed checks after a done
    /// handshake (iodine's signs of a QNAME-minimising resolver); nil when it says nothing.
    func resolverEvidence(log: String) -> String? {
        guard kind == .iodine, let domain = carrierDomain else { return nil }
        return IodineNames(domain: domain, arguments: extraArguments).minimisationEvidence(log: log)
    }

    /// The engine's own line saying why it exited, when its log has one (MasterDnsVPN's Go edition
    /// "Client startup failed: ...", the Python edition's "Failed to parse config file ...").
    func exitWords(log: String) -> String? {
        if kind == .dnstt { return DnsttLog(log).startupErrorLine }
        guard kind == .masterdnsvpn else { return nil }
        return MasterDnsVPNLog(log, edition: edition ?? .go).startupErrorLine
    }

    /// Why the handshake did not finish in time, from what the log shows.
    /// The engine's own words that its handshake is stuck (a timeout hint found in its log), or nil.
    func handshakeStuck(log: String) -> (reason: String, line: String)? {
        for hint in timeoutHints {
            if let line = log.split(whereSeparator: \.isNewline).last(where: { $0.contains(hint.text) }) {
                return (hint.reason, String(line))
            }
        }
        if let last = Host.lastLine(log), let hint = stuckAtHints.first(where: { last.contains($0.text) }) {
            return (hint.reason, last)
        }
        return nil
    }

    func timeoutReason(log: String) -> (reason: String, words: String?) {
        if kind == .masterdnsvpn {
            let missing = MasterDnsVPNLog(log, edition: edition ?? .go).missing
            return ("handshake timeout: \(missing.reason)", missing.line ?? Host.lastLine(log))
        }
        if kind == .dnstt {
            let reason = DnsttLog(log).timeoutReason
            return (reason.reason, reason.words ?? Host.lastLine(log))
        }
        if let stuck = handshakeStuck(log: log) { return (stuck.reason, stuck.line) }
        return ("handshake timeout: no evidence of a session", Host.lastLine(log))
    }

    /// What the engine's log says about the session, as the iOS client's diagnostics list it.
    func diagnostics(log: String) -> (resolver: String?, session: String?) {
        let lines = log.split(whereSeparator: \.isNewline).map(String.init)
        switch kind {
        case .iodine:
            let resolver = lines.first { $0.hasPrefix("Sending DNS queries for") }.flatMap { $0.split(separator: " ").last.map(String.init) }
            let session = lines.first { $0.contains("You are user #") }.flatMap { line in
                line.range(of: "You are user #").map { "user #" + line[$0.upperBound...] }
            }
            return (resolver, session)
        case .masterdnsvpn:
            let parsed = MasterDnsVPNLog(log, edition: edition ?? .go)
            return (parsed.sessionResolver ?? parsed.accepted.first, parsed.sessionID.map { "session id \($0)" })
        case .openvpn:
            return (carriers.first?.description, lines.first { $0.contains("Peer Connection Initiated") })
        case .dnstt:
            return (dnstt.map { "\($0.transport.rawValue) \($0.resolverArgument)" }, DnsttLog(log).session.map { "session \($0)" })
        case .wireguard:
            return (carriers.first?.description, nil)
        case .command:
            return (carriers.first?.description, nil)
        }
    }
}
