public import Base
import Foundation
public import EngineModels
public import Results

/// A MasterDnsVPN profile normalized into the client's own configuration, for either edition: the
/// keys of the Go edition's `client_config.toml` (internal/config/client.go, the `toml:` tags) and
/// its `-resolvers` file, or the keys the Python edition reads (client.py, `self.config.get`, and
/// its `client_config.toml.simple` at 012b7d3) and its `client_resolvers.txt`; one `ip:port` or
/// `[v6]:port` a line for both. Plus the seed's FEC preset.
///
/// The FEC preset is the seed's level table (`FECPreset`) exactly; neither upstream client has an
/// FEC key (their configs and their sources carry no forward error correction: that is VpnDad's
/// own addition), so the preset is written into the file as comments and reported, never as keys
/// the engine would silently ignore.
public struct MasterDnsVPNConfig: Sendable, Hashable {
    /// The SOCKS5 listener inside the sandbox unless `--socks` says otherwise (the client's own
    /// default LISTEN_PORT).
    public static let defaultSOCKS = Endpoint(address: IPAddress("127.0.0.1")!, port: 18000)
    /// The engine's own DNS listener, which takes the sandbox's DNS (resolv.conf) when the profile
    /// sets no DNS servers: names are resolved through the tunnel, as the seed's `mapdns` does.
    public static let localDNS = "127.0.0.1"
    /// Only TUN address the sandbox gives the packet interface for this engine (the seed's packet
    /// tunnel assigns its own; RFC 2544 space, never routed outside the sandbox).
    public static let tunAddress = "198.18.254.1/32"

    public var domain: String
    public var resolvers: [Endpoint]
    public var encryption: EncryptionMethod
    /// Where `encryption` came from: the profile's `encryptionLevel` as written, or the default.
    public var encryptionSource: String
    public var socks: Endpoint
    public var localDNS: Bool
    public var fec: FECPreset?
    public var fecDirection: String?
    public var logLevel = "INFO"
    public var edition: MasterDnsVPNEdition = .go
    /// Python edition: config lines from `--engine-arg KEY=VALUE` (it takes no command-line
    /// arguments), each replacing the key verify writes by default or added after them.
    public var settings: [Setting] = []

    /// One `KEY = VALUE` line of the Python edition's config; the value is TOML as written.
    public struct Setting: Sendable, Hashable {
        public var key: String
        public var value: String

        /// `KEY=VALUE` (blanks around `=` allowed); nil when it has no `=`, its key is not an
        /// upper-case TOML bare key, or its value is empty or spans lines.
        public init?(parsing text: String) {
            guard let equals = text.firstIndex(of: "=") else { return nil }
            let key = text[..<equals].trimmingCharacters(in: .whitespaces)
            let value = text[text.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            guard let first = key.unicodeScalars.first, ("A"..."Z").contains(first),
                  key.unicodeScalars.allSatisfy({ ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }),
                  !value.isEmpty, !value.contains(where: \.isNewline) else { return nil }
            self.key = key
            self.value = value
        }
    }

    /// Keys of the Python edition's config that come from the profile and the flags; an
    /// `--engine-arg` may not set them (verify's probes and checks rest on them).
    public static let pythonOwnedKeys = ["PROTOCOL_TYPE", "DOMAINS", "DATA_ENCRYPTION_METHOD", "ENCRYPTION_KEY", "LISTEN_IP", "LISTEN_PORT",
                                         "SOCKS5_AUTH", "LOCAL_DNS_ENABLED", "LOCAL_DNS_IP", "LOCAL_DNS_PORT"]

    /// The Python edition's config settings of `arguments` (`KEY=VALUE` each; a later one of a
    /// key replaces an earlier one), or the problem with the first one that is not.
    public static func pythonSettings(_ arguments: [String]) -> Result<[Setting], SettingProblem> {
        var settings: [Setting] = []
        for argument in arguments {
            guard let setting = Setting(parsing: argument) else {
                return .failure(SettingProblem(argument: argument, reason: "the Python edition takes no arguments, only config lines: use KEY=VALUE with a TOML value (LOG_LEVEL=\"DEBUG\")"))
            }
            if pythonOwnedKeys.contains(setting.key) {
                return .failure(SettingProblem(argument: argument, reason: "\(setting.key) is written from the profile and the flags (as are \(pythonOwnedKeys.joined(separator: ", ")))"))
            }
            settings.removeAll { $0.key == setting.key }
            settings.append(setting)
        }
        return .success(settings)
    }

    /// Why an `--engine-arg` is no config line for the Python edition.
    public struct SettingProblem: Error, Sendable, Hashable, CustomStringConvertible {
        public var argument: String
        public var reason: String
        public var description: String { "\"\(argument)\": \(reason)" }
    }

    /// `encryptionLevel` names (case and blanks do not matter): the client's method names, its
    /// numbers 0...5, and the seed's `maximum` (the strongest method the client has, AES-256-GCM)
    /// and `minimum` (XOR, the client's default). The seed gives no table for this field; this is
    /// tunnelprobe's reading, shown by `verify --print-config`.
    public static let encryptionNames: [(name: String, method: EncryptionMethod)] = [
        ("none", .none), ("xor", .xor), ("minimum", .xor), ("chacha20", .chacha20),
        ("aes-128-gcm", .aes128GCM), ("aes-192-gcm", .aes192GCM), ("aes-256-gcm", .aes256GCM), ("maximum", .aes256GCM),
    ]

    /// The method an `encryptionLevel` names, nil when it names none.
    public static func encryption(named text: String) -> EncryptionMethod? {
        let key = text.trimmingCharacters(in: .whitespaces).lowercased()
        if let number = Int(key) { return EncryptionMethod(rawValue: number) }
        return encryptionNames.first { $0.name == key }?.method
    }

    /// The names that ask for the edition's strongest method rather than one method.
    static let strongestNames: Set<String> = ["maximum"]

    /// The client's default DATA_ENCRYPTION_METHOD (client_config.toml.simple: 1, XOR, in both editions).
    public static let defaultEncryption = EncryptionMethod.xor

    /// Normalizes a checked profile for `edition`; the problems of a profile that cannot run this
    /// engine name their field. `arguments` are the Python edition's config lines (`KEY=VALUE`).
    public static func normalize(_ profile: Profile, socks: Endpoint?, edition: MasterDnsVPNEdition = .go,
                                 arguments: [String] = []) throws(ProfileError) -> MasterDnsVPNConfig {
        guard profile.tunnelProtocol == .masterdns else {
            throw ProfileError(field: "protocol", "\"\(profile.tunnelProtocol.rawValue)\" is not masterdns: the MasterDnsVPN engine runs masterdns profiles only")
        }
        guard let domain = profile.domain else { throw ProfileError(field: "domain", "is missing (MasterDnsVPN needs its tunnel domain)") }
        guard !profile.resolvers.isEmpty else { throw ProfileError(field: "resolvers", "MasterDnsVPN needs at least one resolver") }
        let section = profile.masterdns
        var encryption = defaultEncryption
        var source = "default (the client's DATA_ENCRYPTION_METHOD = 1)"
        if let level = section?.encryptionLevel {
            guard let method = Self.encryption(named: level) else {
                throw ProfileError(field: "masterdns.encryptionLevel", encryptionProblem(level))
            }
            encryption = method
            source = "masterdns.encryptionLevel \"\(level)\""
            if Self.strongestNames.contains(level.trimmingCharacters(in: .whitespaces).lowercased()) {
                // The seed's "maximum": the strongest method this edition's client can run.
                encryption = edition.strongest
                if edition == .python { source += ": the strongest method the Python edition can run (not AES-GCM: its header label would be 64 characters)" }
            } else if !edition.runs(method) {
                let header = MasterDnsVPNPythonModel.probeHeader
                throw ProfileError(field: "masterdns.encryptionLevel", "\"\(level)\" is DATA_ENCRYPTION_METHOD \(method.rawValue), which MasterDnsVPN's \(edition.displayName) cannot run: its \(header)-byte frame header becomes \(header + method.overhead) bytes, a \(MasterDnsVPNPythonModel(encryption: method).headerLabel(header))-character label, and every query fails (\"Label too long\"); use \"maximum\" (ChaCha20), chacha20 or xor")
            }
        }
        if let socks, socks.host != "127.0.0.1" {
            throw ProfileError(field: "--socks", "MasterDnsVPN's listener must be on 127.0.0.1 inside the sandbox, not \(socks.host)")
        }
        var settings: [Setting] = []
        if edition == .python {
            switch pythonSettings(arguments) {
            case .success(let parsed): settings = parsed
            case .failure(let problem): throw ProfileError(field: "--engine-arg", problem.description)
            }
        }
        return MasterDnsVPNConfig(domain: domain, resolvers: profile.resolvers.map(\.endpoint), encryption: encryption,
                                  encryptionSource: source, socks: socks ?? defaultSOCKS,
                                  localDNS: profile.dns.isEmpty || profile.dns.contains(localDNS),
                                  fec: section?.fec, fecDirection: section?.fecDirection, edition: edition, settings: settings)
    }

    static func encryptionProblem(_ level: String) -> String {
        "\"\(level)\" is not one of \(encryptionNames.map(\.name).joined(separator: ", ")) or 0...5"
    }

    /// The resolver file, one endpoint a line.
    public var resolverFile: String {
        resolvers.map { $0.isIPv6 ? "[\($0.host)]:\($0.port)" : "\($0.host):\($0.port)" }.joined(separator: "\n") + "\n"
    }

    /// `client_config.toml` as the edition's client reads it; `key` nil writes a placeholder (for
    /// `--print-config`, which never shows the secret).
    public func toml(key: String?) -> String {
        func quoted(_ text: String) -> String {
            "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        }
        var lines: [String]
        switch edition {
        case .go:
            lines = ["# Written by tunnelprobe verify from the profile (MasterDnsVPN client, Go edition)."]
            lines.append("DOMAINS = [\(quoted(domain))]")
            lines.append("DATA_ENCRYPTION_METHOD = \(encryption.rawValue)  # \(encryptionSource)")
            lines.append("ENCRYPTION_KEY = \(quoted(key ?? "********"))")
            lines.append("PROTOCOL_TYPE = \"SOCKS5\"")
            lines.append("LISTEN_IP = \(quoted(socks.host))")
            lines.append("LISTEN_PORT = \(socks.port)")
            lines.append("SOCKS5_AUTH = false")
            lines.append("LOCAL_DNS_ENABLED = \(localDNS)")
            if localDNS {
                lines.append("LOCAL_DNS_IP = \(quoted(Self.localDNS))")
                lines.append("LOCAL_DNS_PORT = 53")
            }
            // Nothing of a run is left on disk outside the sandbox's directory.
            lines.append("LOCAL_DNS_CACHE_PERSIST_TO_FILE = false")
            lines.append("SAVE_MTU_SERVERS_TO_FILE = false")
            lines.append("LOG_LEVEL = \(quoted(logLevel))")
        case .python:
            lines = ["# Written by tunnelprobe verify from the profile (MasterDnsVPN client, Python edition: read beside client.py)."]
            lines.append("PROTOCOL_TYPE = \"SOCKS5\"")
            lines.append("DOMAINS = [\(quoted(domain))]")
            lines.append("DATA_ENCRYPTION_METHOD = \(encryption.rawValue)  # \(encryptionSource)")
            lines.append("ENCRYPTION_KEY = \(quoted(key ?? "********"))")
            lines.append("LISTEN_IP = \(quoted(socks.host))")
            lines.append("LISTEN_PORT = \(socks.port)")
            lines.append("SOCKS5_AUTH = false")
            // The edition's own defaults differ from the Go one's (LOCAL_DNS_PORT 5353): all written.
            lines.append("LOCAL_DNS_ENABLED = \(localDNS)")
            lines.append("LOCAL_DNS_IP = \(quoted(Self.localDNS))")
            lines.append("LOCAL_DNS_PORT = 53")
            // Written unless an --engine-arg sets them: the DNS cache stays in memory (DNS_CACHE_ENABLED
            // only persists it to dns_cache.json), no MTU result file; CONFIG_VERSION is the version of
            // client_config.toml.simple these keys follow (an older one only adds a warning).
            let defaults: [(String, String)] = [("DNS_CACHE_ENABLED", "false"), ("SAVE_MTU_SERVERS_TO_FILE", "false"),
                                                ("LOG_LEVEL", quoted(logLevel)), ("CONFIG_VERSION", "5.0")]
            for (name, value) in defaults {
                if let set = settings.first(where: { $0.key == name }) {
                    lines.append("\(name) = \(set.value)  # --engine-arg")
                } else {
                    lines.append("\(name) = \(value)")
                }
            }
            for setting in settings where !defaults.contains(where: { $0.0 == setting.key }) {
                lines.append("\(setting.key) = \(setting.value)  # --engine-arg")
            }
        }
        lines.append("")
        if let fec {
            lines.append("# FEC (the seed's level table; the upstream client has no FEC key, so none is written):")
            lines.append("#   level=\(fec.level) enabled=\(fec.enabled) groupSize=\(fec.groupSize) overheadPercent=\(fec.overheadPercent) symbolSize=\(fec.symbolSize) flushTimeoutMs=\(fec.flushTimeoutMs) direction=\(fecDirection ?? "download")")
        } else {
            lines.append("# FEC: the profile sets no fecLevel.")
        }
        let resolverPlace = edition == .go ? "-resolvers file" : "client_resolvers.txt beside client.py"
        lines.append("# Resolvers (\(resolverPlace)): \(resolvers.map(\.description).joined(separator: ", "))")
        return lines.joined(separator: "\n") + "\n"
    }

    /// The resolver file's name for the edition (`-resolvers` takes any path; the Python edition
    /// reads this name beside client.py).
    public static let resolverFileName = "client_resolvers.txt"
    public static let configFileName = "client_config.toml"
}

/// `verify --print-config`: the engine's configuration as the profile and the flags make it,
/// without creating or starting anything.
public enum EngineConfigText {
    public static func normalized(profile: Profile, engine kind: EngineKind, overrides: EngineOverrides) throws(ProfileError) -> String {
        var overrides = overrides
        // The secret is never printed: a placeholder stands in when none is given.
        if kind == .masterdnsvpn, overrides.password == nil, overrides.passwordFile == nil,
           profile.engines["masterdnsvpn"]?.password == nil, profile.engines["masterdnsvpn"]?.passwordFile == nil {
            overrides.password = "-"
        }
        let engine = try Engine.make(kind, profile: profile, overrides: overrides)
        if let client = engine.dnstt {
            // No config file: the command line is the config (the public key is no secret).
            return "# dnstt-client command line (no config file)\n"
                + (client.environment + [engine.program] + client.arguments(extra: engine.extraArguments)).joined(separator: " ") + "\n"
        }
        guard let config = engine.masterdns else {
            return "# \(kind.rawValue): no config file; verify starts it from its command line with the profile's settings\n"
        }
        let place = config.edition == .python ? " (beside client.py in the run's private copy of its directory)" : ""
        return "# client_config.toml\(place)\n" + config.toml(key: nil) + "# client_resolvers.txt\(place)\n" + config.resolverFile
    }
}
