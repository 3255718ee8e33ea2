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

    public init(dohMethod: DoHMethod = .post, caFile: String? = nil, pin: String? = nil, connectionsPerResolver: Int = 2) {
        self.dohMethod = dohMethod
        self.caFile = caFile
        self.pin = pin
        self.connectionsPerResolver = connectionsPerResolver
    }
}
