/// How a client's queries reach a resolver.
public enum DNSTransport: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// RFC 1035 4.2.1, one datagram per message.
    case udp
    /// RFC 1035 4.2.2 and RFC 7766: two-byte length prefix, queries pipelined on one connection.
    case tcp
    /// DNS over TLS, RFC 7858: the TCP framing inside TLS.
    case tls
    /// DNS over HTTPS, RFC 8484: `application/dns-message` over HTTP/2.
    case https

    /// The port a resolver listens on when the address gives none (RFC 1035 4.2, RFC 7858 3.1, RFC 8484 / RFC 9110 4.2.2).
    public var defaultPort: UInt16 {
        switch self {
        case .udp, .tcp: 53
        case .tls: 853
        case .https: 443
        }
    }

    /// Whether the client leg is a stream (no 512/1232-byte UDP cap toward the client: up to 65,535 bytes).
    public var isStream: Bool { self != .udp }

    public var description: String { rawValue }
}

/// Why a resolver address is not one: the code, the 1-based column in the entry where it went
/// wrong, and the reason in words.
public struct ResolverTargetError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        case empty, unknownScheme, badAddress, badPort, missingBracket, missingPath, badPath, badServerName, nameNotAllowed
        case hostNameNeedsAddress, trailingText, controlCharacter
    }

    public var code: Code
    /// 1-based column in the entry.
    public var column: Int
    public var reason: String

    public init(_ code: Code, column: Int, _ reason: String) {
        self.code = code
        self.column = column
        self.reason = reason
    }

    public var description: String { "column \(column): \(reason)" }
}

/// A resolver address that names its transport, as dnsx, kdig and dnstt users write them:
/// `1.2.3.4[:53]`, `udp://1.2.3.4[:53]`, `tcp://1.2.3.4[:53]`, `tls://1.2.3.4[:853][#sni.name]`,
/// `https://1.2.3.4[:443]/dns-query[#host.name]`, each with IPv6 in brackets (`[2001:db8::53]:53`).
/// The connection always goes to `endpoint` (an address: a name would need a lookup through a
/// resolver the user may be avoiding); the name after `#` is the TLS server name and, for DoH, the
/// HTTP `:authority`.
public struct ResolverTarget: Sendable, Hashable, Codable, Comparable, CustomStringConvertible {
    public var transport: DNSTransport
    public var endpoint: Endpoint
    /// The TLS server name (SNI) and the name the certificate must carry; nil: the address.
    public var serverName: String?
    /// The DoH path (RFC 8484 uses `/dns-query` in its examples); nil for every other transport.
    public var path: String?

    public init(transport: DNSTransport = .udp, endpoint: Endpoint, serverName: String? = nil, path: String? = nil) {
        self.transport = transport
        self.endpoint = endpoint
        self.serverName = serverName
        self.path = transport == .https ? (path ?? ResolverTarget.defaultPath) : nil
    }

    public static let defaultPath = "/dns-query"

    /// Parses one entry (no surrounding blanks, no comment). Total: a value or a typed error.
    public init(parsing text: String) throws(ResolverTargetError) {
        guard !text.isEmpty else { throw ResolverTargetError(.empty, column: 1, "empty entry") }
        if let bad = text.unicodeScalars.firstIndex(where: { $0.value < 0x21 || $0.value == 0x7F }) {
            let column = text.unicodeScalars.distance(from: text.unicodeScalars.startIndex, to: bad) + 1
            throw ResolverTargetError(.controlCharacter, column: column, "blank or control character inside the entry")
        }
        var rest = Substring(text)
        var column = 1
        var transport = DNSTransport.udp
        if let range = rest.range(of: "://") {
            let scheme = rest[..<range.lowerBound].lowercased()
            guard let known = DNSTransport(rawValue: scheme) else {
                throw ResolverTargetError(.unknownScheme, column: 1, "unknown scheme '\(scheme)' (udp, tcp, tls or https)")
            }
            transport = known
            column += rest.distance(from: rest.startIndex, to: range.upperBound)
            rest = rest[range.upperBound...]
        }
        // `#name`: the server name, for tls and https only.
        var serverName: String?
        if let hash = rest.firstIndex(of: "#") {
            let nameColumn = column + rest.distance(from: rest.startIndex, to: hash) + 1
            guard transport == .tls || transport == .https else {
                throw ResolverTargetError(.nameNotAllowed, column: nameColumn - 1, "'#name' is the TLS server name: only tls:// and https:// take one")
            }
            let name = String(rest[rest.index(after: hash)...])
            guard ResolverTarget.isHostName(name) else {
                throw ResolverTargetError(.badServerName, column: nameColumn, "'\(name)' is not a host name")
            }
            serverName = name.lowercased()
            rest = rest[..<hash]
        }
        var path: String?
        if transport == .https {
            guard let slash = rest.firstIndex(of: "/") else {
                throw ResolverTargetError(.missingPath, column: column + rest.count, "https:// needs a path, e.g. \(ResolverTarget.defaultPath)")
            }
            let p = String(rest[slash...])
            let pathColumn = column + rest.distance(from: rest.startIndex, to: slash)
            // RFC 8484 4.1: the URI template's variable is added by the client; a query string here would clash.
            guard p.count > 1, !p.contains("?"), p.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                throw ResolverTargetError(.badPath, column: pathColumn, "'\(p)' is not a DoH path (no '?', printable ASCII)")
            }
            path = p
            rest = rest[..<slash]
        } else if let slash = rest.firstIndex(of: "/") {
            throw ResolverTargetError(.trailingText, column: column + rest.distance(from: rest.startIndex, to: slash),
                                      "a path is for https:// only")
        }
        let hostPort = String(rest)
        let endpoint: Endpoint
        do {
            endpoint = try Endpoint(parsing: hostPort, defaultPort: transport.defaultPort)
        } catch {
            let host = (try? Endpoint.split(hostPort, defaultPort: transport.defaultPort).host) ?? hostPort
            switch error {
            case .missingBracket:
                throw ResolverTargetError(.missingBracket, column: column + hostPort.count, "missing ']'")
            case .badPort, .portOutOfRange:
                let colon = hostPort.lastIndex(of: ":").map { hostPort.distance(from: hostPort.startIndex, to: $0) + 1 } ?? 0
                throw ResolverTargetError(.badPort, column: column + colon, error.description)
            default:
                if (transport == .https || transport == .tls), ResolverTarget.isHostName(host) {
                    throw ResolverTargetError(.hostNameNeedsAddress, column: column,
                                              "'\(host)' is a name: write the resolver's address and the name after '#' (\(transport)://ADDRESS\(transport == .https ? ResolverTarget.defaultPath : "")#\(host))")
                }
                throw ResolverTargetError(.badAddress, column: column, "'\(host)' is not an IP address")
            }
        }
        self.init(transport: transport, endpoint: endpoint, serverName: serverName, path: path)
    }

    /// LDH labels of 1...63 characters, 1...253 in all (RFC 1123 2.1), at least one letter.
    static func isHostName(_ text: String) -> Bool {
        guard (1...253).contains(text.utf8.count), text.contains(where: \.isLetter) else { return false }
        return text.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
            (1...63).contains(label.utf8.count) && label.utf8.allSatisfy { b in
                (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2D
            } && label.first != "-" && label.last != "-"
        }
    }

    /// The name TLS checks the certificate against: the `#name`, else the address text.
    public var tlsName: String { serverName ?? endpoint.host }

    /// The canonical text, which parses back to the same value: a UDP resolver keeps the bare form
    /// (`1.2.3.4:53`) that every earlier report and engine file used.
    public var description: String {
        switch transport {
        case .udp: return endpoint.description
        case .tcp, .tls: return "\(transport)://\(endpoint)" + (serverName.map { "#\($0)" } ?? "")
        case .https: return "https://\(endpoint)\(path ?? ResolverTarget.defaultPath)" + (serverName.map { "#\($0)" } ?? "")
        }
    }

    /// The DoH URL with the name where the user gave one (what dnstt's `-doh` takes): `https://name:port/path`.
    public var url: String? {
        guard transport == .https else { return nil }
        let host = serverName ?? (endpoint.isIPv6 ? "[\(endpoint.host)]" : endpoint.host)
        let port = endpoint.port == 443 ? "" : ":\(endpoint.port)"
        return "https://\(host)\(port)\(path ?? ResolverTarget.defaultPath)"
    }

    public static func < (a: ResolverTarget, b: ResolverTarget) -> Bool { a.description < b.description }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        do {
            try self.init(parsing: text)
        } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "\(text): \(error)"))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
