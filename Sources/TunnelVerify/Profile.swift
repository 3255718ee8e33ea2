public import Base
import OSLayer
import Foundation
public import Results

/// The iOS client's profile (the contract between the app and the engine), plus the per-engine
/// settings `verify` needs to start a real engine. Built only through `Profile.parse`, which names
/// the field of every problem.
public struct Profile: Sendable, Hashable {
    public enum TunnelProtocol: String, Sendable, Hashable, CaseIterable, Codable {
        case iodine, masterdns, dnstt, slipstream, openvpn, wireguard, custom
        /// Carried in DNS queries to the profile's resolvers.
        public var isDNSTunnel: Bool { [.iodine, .masterdns, .dnstt, .slipstream].contains(self) }
    }

    public struct Resolver: Sendable, Hashable, Codable {
        public var type: String
        public var endpoint: Endpoint
        /// A DoH resolver's path (`https`, dnstt profiles only); nil is `/dns-query`.
        public var path: String? = nil
        /// The name TLS checks (`tls`/`https` written `...#name`, dnstt profiles only).
        public var serverName: String? = nil
    }

    public struct MasterDNS: Sendable, Hashable, Codable {
        public var encryptionLevel: String?
        public var fec: FECPreset?
        public var fecDirection: String?
    }

    /// Settings of one engine: its secret (inline or in a file), extra arguments, and the
    /// engine-specific fields as strings (`remote`, `peerPublicKey`, ...).
    public struct EngineSettings: Sendable, Hashable, Codable {
        public var password: String?
        public var passwordFile: String?
        public var keyFile: String?
        public var extraArguments: [String] = []
        public var fields: [String: String] = [:]
    }

    public var version: Int
    public var name: String
    public var tunnelProtocol: TunnelProtocol
    public var domain: String?
    public var resolvers: [Resolver]
    public var expectedExitIP: String?
    public var masterdns: MasterDNS?
    /// The DNS servers the tunnel hands the system (NEDNSSettings.servers); written to the
    /// sandbox's resolv.conf.
    public var dns: [String]
    /// Whether the tunnel claims the default IPv6 route (the iOS client does).
    public var claimIPv6: Bool
    /// Settings per engine name (`iodine`, `openvpn`, `wireguard`, `command`).
    public var engines: [String: EngineSettings]
    /// A split tunnel: `"split": {"include": [entries]}` sends only those into the tunnel,
    /// `{"exclude": [entries]}` sends everything but those (docs/RESILIENCE.md). An entry is an
    /// IPv4 prefix, an IPv6 prefix or a domain name (whose resolved addresses are routed).
    public var split: Split?

    public struct Split: Sendable, Hashable {
        public enum Mode: String, Sendable, Hashable { case include, exclude }
        public var mode: Mode
        /// Prefixes (canonical text, host bits zero) and domain names (lower case, no trailing dot), in the profile's order.
        public var entries: [String]
        public init(mode: Mode, entries: [String]) {
            self.mode = mode
            self.entries = entries
        }

        /// The IPv4 and IPv6 prefixes among the entries.
        public var prefixes: [IPPrefix] { entries.compactMap { try? IPPrefix(parsing: $0) } }
        /// The domain names among the entries.
        public var domains: [String] { entries.filter { (try? IPPrefix(parsing: $0)) == nil } }

        /// One entry checked and normalized: a prefix as written, a domain lower-cased without
        /// its trailing dot; the problem otherwise.
        public static func entry(_ text: String) -> Result<String, EntryProblem> {
            let looksNumeric = text.contains("/") || text.contains(":")
                || text.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || $0 == 46 }
            if looksNumeric {
                if IPAddress(text) != nil {
                    return .failure(EntryProblem("\"\(text)\" is an address without a prefix length (write \(text)/\(text.contains(":") ? 128 : 32))"))
                }
                do { return .success(try IPPrefix(parsing: text).description) } catch { return .failure(EntryProblem("\"\(text)\" \(error)")) }
            }
            let lowered = text.hasSuffix(".") ? String(text.lowercased().dropLast()) : text.lowercased()
            if let problem = Profile.hostNameProblem(lowered) { return .failure(EntryProblem("\"\(text)\" is not a domain name: \(problem)")) }
            // RFC 1123 2.1 / RFC 3696 2: a top-level label is never all digits.
            if lowered.split(separator: ".").last?.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) == true {
                return .failure(EntryProblem("\"\(text)\" is neither a prefix nor a domain name (its last label is all digits)"))
            }
            return .success(lowered)
        }

        public struct EntryProblem: Error, Sendable, Hashable, CustomStringConvertible {
            public var description: String
            init(_ description: String) { self.description = description }
        }
    }

    static let fecDirections: Set<String> = ["download", "upload", "both"]
    static let engineSections = ["iodine", "masterdnsvpn", "dnstt", "openvpn", "wireguard", "command"]
    /// The resolver types a dnstt profile may also give, with their aliases.
    static let streamTransports: [String: DNSTransport] = ["tls": .tls, "dot": .tls, "https": .https, "doh": .https]

    /// Parses and validates a profile document.
    public static func parse(_ bytes: [UInt8]) throws(ProfileError) -> Profile {
        let root = try JSONObject(JSONValue.parse(bytes), path: "")
        guard let version = try root.integer("version") else { throw ProfileError(field: "version", "is missing") }
        guard version == 1 else { throw ProfileError(field: "version", "\(version) is not supported (only 1)") }
        let name = try root.requiredString("name")
        let protocolName = try root.requiredString("protocol")
        guard let tunnelProtocol = TunnelProtocol(rawValue: protocolName.lowercased()) else {
            let known = TunnelProtocol.allCases.map(\.rawValue).joined(separator: ", ")
            throw ProfileError(field: "protocol", "\"\(protocolName)\" is not one of \(known)")
        }

        var domain: String?
        if let text = try root.string("domain") {
            let lowered = text.hasSuffix(".") ? String(text.lowercased().dropLast()) : text.lowercased()
            if let problem = hostNameProblem(lowered) { throw ProfileError(field: "domain", "\"\(text)\": \(problem)") }
            domain = lowered
        } else if tunnelProtocol.isDNSTunnel {
            throw ProfileError(field: "domain", "is missing (a \(tunnelProtocol.rawValue) profile needs its tunnel domain)")
        }

        var resolvers: [Resolver] = []
        for (index, item) in (try root.array("resolvers") ?? []).enumerated() {
            let entry = try JSONObject(item, path: "resolvers[\(index)]")
            let type = (try entry.string("type") ?? "udp").lowercased()
            let address = try entry.requiredString("address")
            if tunnelProtocol == .dnstt, let transport = streamTransports[type] {
                // dnstt's client speaks DoT and DoH too (-dot, -doh): the transports' address forms.
                var text = address.contains("://") ? address : "\(transport.rawValue)://\(address)"
                // A bare DoH address takes the usual path (RFC 8484 names none; /dns-query is common).
                if transport == .https, !address.contains("://"), !address.contains("/") {
                    let cut = text.firstIndex(of: "#") ?? text.endIndex
                    text.insert(contentsOf: ResolverTarget.defaultPath, at: cut)
                }
                let target: ResolverTarget
                do { target = try ResolverTarget(parsing: text) } catch {
                    throw ProfileError(field: entry.name("address"), "\"\(address)\": \(error)")
                }
                guard target.transport == transport else {
                    throw ProfileError(field: entry.name("address"), "\"\(address)\" is not a \(type) address")
                }
                resolvers.append(Resolver(type: transport.rawValue, endpoint: target.endpoint, path: target.path, serverName: target.serverName))
                continue
            }
            guard type == "udp" else {
                throw ProfileError(field: entry.name("type"), "\"\(type)\" is not supported (only udp\(tunnelProtocol == .dnstt ? ", tls, https" : ""))")
            }
            guard let endpoint = try? Endpoint(parsing: address, defaultPort: 53) else {
                throw ProfileError(field: entry.name("address"), "\"\(address)\" is not ip, ip:port or [v6]:port")
            }
            resolvers.append(Resolver(type: type, endpoint: endpoint))
        }
        if tunnelProtocol.isDNSTunnel, resolvers.isEmpty {
            throw ProfileError(field: "resolvers", "needs at least one resolver for a \(tunnelProtocol.rawValue) profile")
        }

        var expected: String?
        if let text = try root.string("expectedExitIP") {
            guard IPAddress(text) != nil else { throw ProfileError(field: "expectedExitIP", "\"\(text)\" is not an IP address") }
            expected = text
        }

        var masterdns: MasterDNS?
        if let section = try root.object("masterdns") {
            // Every bad field of the section is named, not only the first.
            var problems: [ProfileError] = []
            var settings = MasterDNS()
            do {
                if let level = try section.string("encryptionLevel") {
                    if level.trimmingCharacters(in: .whitespaces).isEmpty {
                        problems.append(ProfileError(field: section.name("encryptionLevel"), "is empty"))
                    } else if MasterDnsVPNConfig.encryption(named: level) == nil {
                        problems.append(ProfileError(field: section.name("encryptionLevel"), MasterDnsVPNConfig.encryptionProblem(level)))
                    } else {
                        settings.encryptionLevel = level
                    }
                }
            } catch { problems.append(error) }
            do {
                if let level = try section.string("fecLevel") {
                    if let preset = FECPreset.normalized(level) {
                        settings.fec = preset
                    } else {
                        let known = FECPreset.presets.map(\.level).joined(separator: ", ")
                        problems.append(ProfileError(field: section.name("fecLevel"), "\"\(level)\" is not one of \(known)"))
                    }
                }
            } catch { problems.append(error) }
            do {
                if let direction = try section.string("fecDirection") {
                    if fecDirections.contains(direction.lowercased()) {
                        settings.fecDirection = direction.lowercased()
                    } else {
                        problems.append(ProfileError(field: section.name("fecDirection"), "\"\(direction)\" is not one of download, upload, both"))
                    }
                }
            } catch { problems.append(error) }
            if let first = problems.first {
                var combined = first
                combined.others = Array(problems.dropFirst())
                throw combined
            }
            masterdns = settings
        }

        let dns = try root.strings("dns") ?? []
        for (index, server) in dns.enumerated() where IPAddress(server) == nil {
            throw ProfileError(field: "dns[\(index)]", "\"\(server)\" is not an IP address")
        }
        let claimIPv6 = try root.bool("claimIPv6") ?? true

        var engines: [String: EngineSettings] = [:]
        for key in engineSections {
            guard let section = try root.object(key) else { continue }
            var settings = EngineSettings()
            for (field, value) in section.fields.sorted(by: { $0.key < $1.key }) {
                switch field {
                case "password": settings.password = try section.string(field)
                case "passwordFile": settings.passwordFile = try section.string(field)
                case "keyFile": settings.keyFile = try section.string(field)
                case "extraArguments": settings.extraArguments = try section.strings(field) ?? []
                default:
                    switch value {
                    case .string(let text): settings.fields[field] = text
                    case .number(let number): settings.fields[field] = Int(exactly: number).map(String.init) ?? "\(number)"
                    case .bool(let flag): settings.fields[field] = flag ? "true" : "false"
                    case .null: break
                    default: throw ProfileError(field: section.name(field), "must be a string, number or boolean, found \(value.typeName)")
                    }
                }
            }
            engines[key] = settings
        }

        var split: Split?
        if let section = try root.object("split") {
            let include = try section.strings("include"), exclude = try section.strings("exclude")
            guard (include == nil) != (exclude == nil) else {
                throw ProfileError(field: "split", "needs exactly one of include or exclude")
            }
            let mode: Split.Mode = include != nil ? .include : .exclude
            let written = include ?? exclude ?? []
            guard !written.isEmpty else { throw ProfileError(field: "split.\(mode.rawValue)", "is empty") }
            var entries: [String] = []
            for (index, text) in written.enumerated() {
                switch Split.entry(text) {
                case .success(let entry): entries.append(entry)
                case .failure(let problem): throw ProfileError(field: "split.\(mode.rawValue)[\(index)]", problem.description)
                }
            }
            split = Split(mode: mode, entries: entries)
        }

        return Profile(version: version, name: name, tunnelProtocol: tunnelProtocol, domain: domain, resolvers: resolvers,
                       expectedExitIP: expected, masterdns: masterdns, dns: dns, claimIPv6: claimIPv6, engines: engines, split: split)
    }

    /// Reads and parses a profile file; an unreadable file is reported as the document's problem.
    public static func load(path: String) throws(ProfileError) -> Profile {
        // One byte past the limit is enough to know the file is too large, without reading it all.
        guard let bytes = SystemCall.readFile(path, limit: JSONLimits.profile.maxBytes + 1) else {
            throw ProfileError(field: "(document)", "cannot read \(path)")
        }
        return try parse(bytes)
    }

    /// A host name in presentation form without the trailing dot (RFC 1035 2.3.1, RFC 1123 2.1).
    static func hostNameProblem(_ name: String) -> String? {
        guard !name.isEmpty, name.utf8.count <= 253 else { return "must have 1 to 253 characters" }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2 else { return "needs at least two labels" }
        for label in labels {
            guard (1...63).contains(label.utf8.count) else { return "every label needs 1 to 63 characters" }
            let ok = label.utf8.allSatisfy { ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 45 || $0 == 95 }
            guard ok, label.first != "-", label.last != "-" else { return "labels take letters, digits and inner hyphens" }
        }
        return nil
    }
}
