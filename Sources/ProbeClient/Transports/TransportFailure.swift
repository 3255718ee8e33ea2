/// Why a stream transport could not carry a query to a resolver, named so that a user can act on
/// it: each case is found by what the handshake showed, never by matching an error's text.
public enum TransportFailure: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Nothing listens on the port (TCP RST: ECONNREFUSED).
    case connectionRefused
    /// No TCP connection within the timeout.
    case connectTimeout
    /// The TCP connection was taken but the TLS handshake did not finish within the timeout (an
    /// overloaded server, or one that waits for something else than a ClientHello).
    case handshakeTimeout
    /// The connection failed for another reason (unreachable network, ...), in the kernel's words.
    case connectFailed(String)
    /// The TLS handshake failed before the server showed a certificate: the port does not speak
    /// TLS (a plain DNS or HTTP server) or refused the handshake (protocol version, ALPN).
    case handshakeRefused(String)
    /// A certificate of the chain is outside its validity period (RFC 5280 4.1.2.5).
    case expired(notAfter: Int)
    /// The chain is trusted but the certificate does not carry the name asked for (RFC 6125).
    case wrongName(asked: String)
    /// The chain does not lead to a trusted root (the system store or `--tls-ca`).
    case unknownCA
    /// The server's public key does not match `--tls-pin` (SPKI SHA-256, RFC 7469 2.4).
    case pinMismatch(seen: String)
    /// DoH: the server answered with an HTTP status other than 200 (RFC 8484 4.2.1).
    case httpStatus(Int)
    /// The connection closed with queries outstanding.
    case closed(String)

    /// A short stable name for tables and tests.
    public var name: String {
        switch self {
        case .connectionRefused: "connectionRefused"
        case .connectTimeout: "connectTimeout"
        case .connectFailed: "connectFailed"
        case .handshakeRefused: "handshakeRefused"
        case .handshakeTimeout: "handshakeTimeout"
        case .expired: "expired"
        case .wrongName: "wrongName"
        case .unknownCA: "unknownCA"
        case .pinMismatch: "pinMismatch"
        case .httpStatus: "httpStatus"
        case .closed: "closed"
        }
    }

    public var description: String {
        switch self {
        case .connectionRefused: "connection refused (nothing listens on that port)"
        case .connectTimeout: "no connection within the timeout"
        case .connectFailed(let why): "cannot connect: \(why)"
        case .handshakeRefused(let why): "TLS handshake refused or TLS not offered (\(why))"
        case .handshakeTimeout: "TCP connected, but no TLS handshake within the timeout (TLS not offered on this port, or the server is overloaded)"
        case .expired(let notAfter): "certificate expired or not yet valid (notAfter \(notAfter) s since 1970)"
        case .wrongName(let asked): "certificate does not carry the name \(asked)"
        case .unknownCA: "certificate not signed by a trusted CA"
        case .pinMismatch(let seen): "public key does not match the pin (SPKI SHA-256 seen: \(seen))"
        case .httpStatus(let status): "HTTP status \(status)"
        case .closed(let why): "connection closed: \(why)"
        }
    }
}

/// What the stream transports need to know beyond the resolver's address.
public struct TransportSettings: Sendable, Hashable {
    /// How DoH sends the query (RFC 8484 4.1): POST carries the message as the body, GET as a
    /// base64url `dns` parameter in the URL (which some front ends limit in length).
    public enum DoHMethod: String, Sendable, Hashable, Codable, CaseIterable {
        case post, get
    }

    public var dohMethod: DoHMethod = .post
    /// PEM file of the CAs to trust instead of the system store.
    public var caFile: String?
    /// Base64 SHA-256 of the server's SubjectPublicKeyInfo (kdig's `+tls-pin`): when set, the key is
    /// checked instead of the chain and name.
    public var pin: String?
    /// At most this many connections to one resolver; queries are pipelined on them (RFC 7766 6.2.1.1).
    public var connectionsPerResolver = 2
    /// A new connection is opened (up to the bound) when every open one has this many queries outstanding.
    public var pipelineDepth = 32
    /// DoH GET: the longest request target (path, `?dns=` and the base64url query) sent. A longer
    /// one is not sent and the query fails with `uriTooLong` (no silent switch to POST: the
    /// measurement says what GET through such a front end carries). Default 8000, the length RFC
    /// 9110 4.1 recommends every recipient support; front ends that allow less are modelled with
    /// `--doh-get-uri-limit`. Tunnel queries stay far below it (a 255-byte name makes a target of
    /// about 400 characters).
    public var dohGetURILimit = 8000

    public init(dohMethod: DoHMethod = .post, caFile: String? = nil, pin: String? = nil, connectionsPerResolver: Int = 2,
                dohGetURILimit: Int = 8000) {
        self.dohMethod = dohMethod
        self.caFile = caFile
        self.pin = pin
        self.connectionsPerResolver = connectionsPerResolver
        self.dohGetURILimit = dohGetURILimit
    }

    /// The length of the GET request target for a query of `queryBytes` bytes on `path`: the path,
    /// `?dns=` and the unpadded base64url of the message (RFC 8484 4.1, RFC 4648 5).
    public static func getTargetLength(path: String, queryBytes: Int) -> Int {
        path.utf8.count + 5 + (queryBytes * 4 + 2) / 3
    }
}
