public import Base
public import NIOCore

/// Everything `tunnelprobe impair` does. `validate()` checks it; the command line (`impair`, `lab up
/// --impair`) builds it from its flags.
public struct ImpairmentConfig: Sendable, Hashable {
    /// Where clients send their queries.
    public var listen: Endpoint
    /// The resolver the relay forwards to.
    public var upstream: Endpoint
    public var seed: UInt64
    /// JSON-lines log of every datagram (`docs/IMPAIR.md`); nil for none.
    public var logPath: String?
    public var up: DirectionConfig
    public var down: DirectionConfig
    /// Probability that a query is answered SERVFAIL by the relay itself instead of forwarded.
    public var servfail: Double
    /// A fates file to replay, and which resolver's streams to take.
    public var replayPath: String?
    public var replayResolver: String?
    /// A client address without traffic for this long loses its upstream socket.
    public var mappingIdleSeconds: Double
    /// Datagrams one `recvmmsg` reads (SwiftNIO vector reads).
    public var vectorReads: Int

    public init(listen: Endpoint, upstream: Endpoint, seed: UInt64 = 0, logPath: String? = nil,
                up: DirectionConfig = .init(), down: DirectionConfig = .init(), servfail: Double = 0,
                replayPath: String? = nil, replayResolver: String? = nil, mappingIdleSeconds: Double = 60,
                vectorReads: Int = 16) {
        self.listen = listen
        self.upstream = upstream
        self.seed = seed
        self.logPath = logPath
        self.up = up
        self.down = down
        self.servfail = servfail
        self.replayPath = replayPath
        self.replayResolver = replayResolver
        self.mappingIdleSeconds = mappingIdleSeconds
        self.vectorReads = vectorReads
    }

    public func direction(_ d: Direction) -> DirectionConfig { d == .up ? up : down }
}

/// The impairments of one direction. Every field off by default.
public struct DirectionConfig: Sendable, Hashable {
    public enum Oversize: String, Sendable, Hashable, CaseIterable {
        case drop, truncate
    }

    public var loss: LossProcess?
    public var delayMs: Double = 0
    public var jitterMs: Double = 0
    public var reorder: Reordering?
    public var duplicate: Double = 0
    /// Datagrams per second, burst and queue length of the shaper.
    public var rate: Double?
    public var rateBurst: Int = 1
    public var rateQueue: Int = 100
    /// What happens to a datagram the shaper cannot take: dropped, or (queries only) answered
    /// REFUSED by the relay, as public resolvers answer a client over its rate limit. With
    /// `rateQueue` 0 the shaper is a policer: a query either has a token or is over the limit.
    public var rateExcess: RateExcess = .drop

    public enum RateExcess: String, Sendable, Hashable, CaseIterable {
        case drop, refuse
    }
    /// Drop datagrams whose QNAME is longer than this many characters.
    public var maxQName: Int?
    /// Datagrams larger than this many bytes are dropped or truncated.
    public var maxSize: Int?
    public var oversize: Oversize = .drop

    public init() {}

    /// True when a fates replay would contradict this direction's settings (the stochastic models
    /// a replay replaces).
    var hasStochasticModel: Bool {
        loss != nil || delayMs > 0 || jitterMs > 0 || reorder != nil || duplicate > 0
    }

    public var isIdentity: Bool {
        !hasStochasticModel && rate == nil && maxQName == nil && maxSize == nil
    }
}

extension Endpoint {
    public func socketAddress() throws -> SocketAddress { try SocketAddress(ipAddress: host, port: Int(port)) }
}
