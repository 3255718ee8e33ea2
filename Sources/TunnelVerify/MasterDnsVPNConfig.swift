public import Base
import Foundation
public import EngineModels

/// A MasterDnsVPN profile normalized into the client's own configuration: the keys of the Go
/// edition's `client_config.toml` (internal/config/client.go, the `toml:` tags) and its resolver
/// file (`-resolvers`, one `ip:port` or `[v6]:port` a line), plus the seed's FEC preset.
///
/// The FEC preset is the seed's level table (`FECPreset`) exactly; the upstream client has no FEC
/// key (its config and its source carry no forward error correction: that is VpnDad's own
/// addition), so the preset is written into the file as comments and reported, never as keys the
/// engine would silently ignore.
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

    /// The client's default DATA_ENCRYPTION_METHOD (client_config.toml.simple: 1, XOR).
    public static let defaultEncryption = EncryptionMethod.xor

    /// Normalizes a checked profile; the problems of a profile that cannot run this engine name
    /// their field.
    public static func normalize(_ profile: Profile, socks: Endpoint?) throws(ProfileError) -> MasterDnsVPNConfig {
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
        }
        if let socks, socks.host != "127.0.0.1" {
            throw ProfileError(field: "--socks", "MasterDnsVPN's listener must be on 127.0.0.1 inside the sandbox, not \(socks.host)")
        }
        return MasterDnsVPNConfig(domain: domain, resolvers: profile.resolvers.map(\.endpoint), encryption: encryption,
                                  encryptionSource: source, socks: socks ?? defaultSOCKS,
                                  localDNS: profile.dns.isEmpty || profile.dns.contains(localDNS),
                                  fec: section?.fec, fecDirection: section?.fecDirection)
    }

    static func encryptionProblem(_ level: String) -> String {
        "\"\(level)\" is not one of \(encryptionNames.map(\.name).joined(separator: ", ")) or 0...5"
    }

    /// The resolver file, one endpoint a line.
    public var resolverFile: String {
        resolvers.map { $0.isIPv6 ? "[\($0.host)]:\($0.port)" : "\($0.host):\($0.port)" }.joined(separator: "\n") + "\n"
    }

    /// `client_config.toml` as the engine reads it; `key` nil writes a placeholder (for
    /// `--print-config`, which never shows the secret).
    public func toml(key: String?) -> String {
        var lines = ["# Written by tunnelprobe verify from the profile (MasterDnsVPN client, Go edition)."]
        func quoted(_ text: String) -> String {
            "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        }
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
        lines.append("")
        if let fec {
            lines.append("# FEC (the seed's level table; the upstream client has no FEC key, so none is written):")
            lines.append("#   level=\(fec.level) enabled=\(fec.enabled) groupSize=\(fec.groupSize) overheadPercent=\(fec.overheadPercent) symbolSize=\(fec.symbolSize) flushTimeoutMs=\(fec.flushTimeoutMs) direction=\(fecDirection ?? "download")")
        } else {
            lines.append("# FEC: the profile sets no fecLevel.")
        }
        lines.append("# Resolvers (-resolvers file): \(resolvers.map(\.description).joined(separator: ", "))")
        return lines.joined(separator: "\n") + "\n"
    }
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
        guard let config = engine.masterdns else {
            return "# \(kind.rawValue): no config file; verify starts it from its command line with the profile's settings\n"
        }
        return "# client_config.toml\n" + config.toml(key: nil) + "# client_resolvers.txt\n" + config.resolverFile
    }
}
