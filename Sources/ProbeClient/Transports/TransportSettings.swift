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
