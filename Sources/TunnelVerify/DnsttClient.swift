public import Base
import Foundation

/// dnstt's client (`dnstt-client`, www.bamsoftware.com/git/dnstt.git) as verify starts it: one
/// resolver in its transport (`-udp HOST:PORT`, `-dot HOST:PORT`, `-doh URL`; one resolver per
/// process, `man/dnstt-client.1`), the server's Noise public key (`-pubkey HEX` or
/// `-pubkey-file PATH`), the tunnel domain and a local TCP listener. The client forwards each TCP
/// connection on that listener as one smux stream to the server, which connects it to its upstream
/// (`dnstt-server ... DOMAIN UPSTREAM`): verify needs that upstream to be a SOCKS5 proxy (the lab
/// runs microsocks there), so the listener is the run's SOCKS5 endpoint.
public struct DnsttClient: Sendable, Hashable {
    public enum Transport: String, Sendable, Hashable {
        case udp, dot, doh
    }

    public var transport: Transport
    /// `HOST:PORT` for -udp and -dot, the URL for -doh.
    public var resolverArgument: String
    public var resolver: Endpoint
    public var domain: String
    /// Exactly one of the two: the key in hex (64 digits, public: it is no secret) or its file.
    public var pubkey: String?
    public var pubkeyFile: String?
    /// The client's TCP listener: verify's SOCKS5 endpoint (through the server's SOCKS upstream).
    public var listener: Endpoint
    /// `-utls`: the client's TLS fingerprint for -dot/-doh; nil leaves the client's default.
    public var utls: String?
    /// PEM file of CAs the client trusts for -dot/-doh (Go's crypto/x509 reads `SSL_CERT_FILE`):
    /// a resolver with its own CA, like the lab's.
    public var caFile: String?

    /// Where the listener is unless `--socks` says otherwise (dnstt's README example port).
    public static let defaultListener = Endpoint(address: IPAddress("127.0.0.1")!, port: 7000)

    /// What to do when no dnstt-client is found (it is in no Debian package).
    public static let package = "the dnstt client is in no package registry: build dnstt-client from www.bamsoftware.com/git/dnstt.git (Go) and put it on PATH, or give --engine-path"

    /// The profile's `dnstt` section and first resolver, checked; problems name the field.
    public static func normalize(_ profile: Profile, listener: Endpoint?, settings: Profile.EngineSettings) throws(ProfileError) -> DnsttClient {
        guard let domain = profile.domain else { throw ProfileError(field: "domain", "is missing (dnstt needs its tunnel domain)") }
        guard let resolver = profile.resolvers.first else { throw ProfileError(field: "resolvers", "dnstt needs a resolver") }
        let transport: Transport
        let argument: String
        switch resolver.type {
        case "udp":
            transport = .udp
            argument = resolver.endpoint.description
        case "tls":
            // -dot HOST:PORT dials HOST and checks the certificate against it: a #name goes in as
            // the host (the client resolves it), as the exported dnstt arguments do (DnsttModel).
            transport = .dot
            argument = resolver.serverName.map { "\($0):\(resolver.endpoint.port)" } ?? resolver.endpoint.description
        case "https":
            transport = .doh
            argument = ResolverTarget(transport: .https, endpoint: resolver.endpoint, serverName: resolver.serverName, path: resolver.path).url ?? ""
        default:
            throw ProfileError(field: "resolvers[0].type", "\"\(resolver.type)\" is not one of udp, tls, https")
        }
        var pubkey = settings.fields["pubkey"]
        let pubkeyFile = settings.fields["pubkeyFile"] ?? settings.keyFile
        if let key = pubkey {
            let lowered = key.lowercased()
            guard lowered.utf8.count == 64, lowered.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }) else {
                throw ProfileError(field: "dnstt.pubkey", "must be the server's public key in hex, 64 digits (dnstt-server prints it as \"pubkey ...\")")
            }
            pubkey = lowered
        }
        switch (pubkey, pubkeyFile) {
        case (nil, nil): throw ProfileError(field: "dnstt.pubkey", "is missing (or give dnstt.pubkeyFile, --key-file)")
        case (.some, .some): throw ProfileError(field: "dnstt.pubkeyFile", "give only one of dnstt.pubkey and dnstt.pubkeyFile")
        case (nil, let file?):
            guard FileManager.default.isReadableFile(atPath: file) else { throw ProfileError(field: "dnstt.pubkeyFile", "cannot read \(file)") }
        default: break
        }
        let caFile = settings.fields["caFile"]
        if let caFile {
            guard transport != .udp else { throw ProfileError(field: "dnstt.caFile", "is for a tls or https resolver, not udp") }
            guard FileManager.default.isReadableFile(atPath: caFile) else { throw ProfileError(field: "dnstt.caFile", "cannot read \(caFile)") }
        }
        if let utls = settings.fields["utls"], utls.isEmpty || utls.contains(where: \.isWhitespace) {
            throw ProfileError(field: "dnstt.utls", "\"\(utls)\" is not a -utls value (e.g. none, Firefox, 3*Firefox,1*Chrome)")
        }
        return DnsttClient(transport: transport, resolverArgument: argument, resolver: resolver.endpoint, domain: domain,
                           pubkey: pubkey, pubkeyFile: pubkeyFile, listener: listener ?? defaultListener,
                           utls: settings.fields["utls"], caFile: caFile)
    }

    /// The client's arguments after its program: options, then DOMAIN LOCALADDR (`man/dnstt-client.1`).
    public func arguments(extra: [String]) -> [String] {
        var argv = ["-\(transport.rawValue)", resolverArgument]
        if let pubkey { argv += ["-pubkey", pubkey] }
        if let pubkeyFile { argv += ["-pubkey-file", pubkeyFile] }
        if let utls { argv += ["-utls", utls] }
        return argv + extra + [domain, listener.description]
    }

    /// The environment the client needs: the CA file for a resolver with its own CA.
    public var environment: [String] { caFile.map { ["SSL_CERT_FILE=\($0)"] } ?? [] }
}

/// What dnstt-client's log says, read line by line (Go's `log` lines, `2026/11/27 04:23:09 text`).
/// From its source (upstream e5e873b, `dnstt-client/main.go` run/handle, `dns.go`, `http.go`,
/// `tls.go`) and the recordings in Tests/TunnelVerifyTests/Fixtures/dnstt. Total: any text yields a value.
///
/// The handshake rule: the client logs `begin session` when it opens its KCP conversation, before
/// the Noise handshake, and nothing when the handshake ends; it accepts local TCP connections only
/// after `noise.NewClient` (the NK handshake, one round trip) and `smux.Client` returned, and logs
/// `begin stream CONV:ID` for each. So the first `begin stream` line proves the handshake done and
/// the first smux stream open. verify connects once to the listener right after launch
/// (`Engine.configure`) so that line comes as soon as the handshake is done.
public struct DnsttLog: Sendable, Hashable {
    /// `effective MTU N`: the client's KCP MTU (its upload payload; ENGINES.md "client MTU").
    public var effectiveMTU: Int?
    /// The KCP conversation of `begin session XXXXXXXX` (hex).
    public var session: String?
    public var sessionLine: String?
    /// The first `begin stream CONV:ID` line: the handshake evidence.
    public var firstStreamLine: String?
    /// `got "404 Not Found"; ceasing sending for 10s`: the DoH server answered with an HTTP error.
    public var httpRefusalLine: String?
    /// A TLS certificate the client does not trust (`x509: ...`) on -dot or -doh.
    public var untrustedLine: String?
    /// The last send/receive/dial error line (`sendLoop: ...`, `recvLoop: ...`, `dial tls: ...`).
    public var transportErrorLine: String?
    /// A line the client prints before exiting at start (bad key, domain, listener, flags).
    public var startupErrorLine: String?

    static let startupErrors = [
        "pubkey format error", "cannot read pubkey", "invalid domain", "opening local listener",
        "the -pubkey or -pubkey-file option is required", "only one of -pubkey and -pubkey-file",
        "one of -doh, -dot, or -udp is required", "only one of -doh, -dot, and -udp", "parsing -utls",
        "leaves only", "flag provided but not defined",
    ]

    public init(_ text: String) {
        for raw in text.split(whereSeparator: \.isNewline) {
            let line = String(raw)
            let message = Self.message(line)
            if let value = Self.number(after: "effective MTU ", in: message), effectiveMTU == nil {
                effectiveMTU = value
            } else if message.hasPrefix("begin session "), session == nil {
                session = String(message.dropFirst("begin session ".count)).trimmingCharacters(in: .whitespaces)
                sessionLine = line
            } else if message.hasPrefix("begin stream "), firstStreamLine == nil {
                firstStreamLine = line
            } else if message.hasPrefix("got \""), message.contains("ceasing sending"), httpRefusalLine == nil {
                httpRefusalLine = line
            } else if message.contains("x509:") || message.contains("failed to verify certificate") {
                if untrustedLine == nil { untrustedLine = line }
            } else if message.hasPrefix("sendLoop:") || message.hasPrefix("recvLoop:") || message.hasPrefix("dial tls:") || message.hasPrefix("send:") {
                transportErrorLine = line
            } else if startupErrorLine == nil, Self.startupErrors.contains(where: { message.contains($0) }) {
                startupErrorLine = line
            }
        }
    }

    /// The text after Go's `log` prefix (`YYYY/MM/DD HH:MM:SS `), or the line as it is.
    static func message(_ line: String) -> String {
        let scalars = Array(line.utf8)
        guard scalars.count >= 20, scalars[4] == UInt8(ascii: "/"), scalars[7] == UInt8(ascii: "/"),
              scalars[13] == UInt8(ascii: ":"), scalars[19] == UInt8(ascii: " ") else { return line }
        return String(decoding: scalars[20...], as: UTF8.self)
    }

    static func number(after prefix: String, in message: String) -> Int? {
        guard message.hasPrefix(prefix) else { return nil }
        return Int(message.dropFirst(prefix.count).trimmingCharacters(in: .whitespaces))
    }

    /// The handshake so far: done on the first stream; failed when the resolver's DoH server refuses
    /// or its certificate is not trusted (the client retries, but nothing changes in this run).
    var handshake: HandshakeState {
        if let firstStreamLine {
            return .done(evidence: firstStreamLine + (session.map { " (Noise handshake done, session \($0))" } ?? ""))
        }
        if let httpRefusalLine {
            return .failed(reason: "the DoH server refused the queries (an HTTP error status, not a DNS answer)", words: httpRefusalLine)
        }
        if let untrustedLine {
            return .failed(reason: "the resolver's TLS certificate is not trusted (give dnstt.caFile for a resolver with its own CA)", words: untrustedLine)
        }
        return .pending
    }

    /// Why no handshake came in time, in what the log allows. The client logs the same for a wrong
    /// public key, a resolver that drops the queries and an absent server (`begin session`, then
    /// nothing: Fixtures/dnstt wrong-key, resolver-drop, server-absent), so the reason names all three;
    /// over UDP verify names the one cause from the carrier instead (`DnsttCarrierTally`).
    var timeoutReason: (reason: String, words: String?) {
        if let transportErrorLine {
            return ("handshake timeout: the client cannot reach the resolver", transportErrorLine)
        }
        if session != nil {
            return ("handshake timeout: the Noise handshake got no reply: a wrong server public key, a resolver that drops the queries, or no dnstt-server behind the domain (the client logs the same for all three; the server's log says \"message authentication failed\" for a wrong key)", sessionLine)
        }
        return ("handshake timeout: the client never began its session", nil)
    }

    /// Why data may stall after the handshake over UDP: the server fills answers up to its `-mtu`.
    static let truncationHint = "dnstt-server fills each answer up to its -mtu (default 1232 bytes); a resolver that truncates or drops answers that large passes the handshake and small replies but stalls downloads: lower the server's -mtu to what the resolver delivers (scan's download limit)"
}
