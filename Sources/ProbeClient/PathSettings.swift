public import Base
public import DNSWire
public import NIOCore
public import ProbeProtocol

/// What a `path` run sends, to whom, and how long it waits (docs/PROTOCOL.md, "Path probes").
public struct PathSettings: Sendable {
    public var resolvers: [Endpoint]
    public var zone: DNSName
    public var key: ProbeKey
    /// Probes per second to each resolver.
    public var rate: Double
    /// Probes per resolver.
    public var count: Int
    /// Payload characters in each query name (meta block included, at least 48).
    public var uploadCharacters: Int
    /// Payload bytes asked for in each response (the response carries at least the receive history).
    public var downloadBytes: Int
    public var recordType: DNSType
    /// RFC 7680 Tmax: a response later than this is lost (and counted as late).
    public var tmax: TimeAmount
    /// Drain rounds after the stream ends, to fetch the history of the last seqs (a drain can be lost too).
    public var drainRounds: Int
    /// No authenticated reply at all within this bound: the responder is absent and the stream stops.
    public var absentAfter: TimeAmount
    public var ednsSize: UInt16
    public var seed: UInt64

    public init(resolvers: [Endpoint], zone: DNSName, key: ProbeKey, rate: Double, count: Int,
                uploadCharacters: Int = ProbeMeta.characterCount, downloadBytes: Int = 0, recordType: DNSType = .txt,
                tmax: TimeAmount = .seconds(2), drainRounds: Int = 3, absentAfter: TimeAmount = .seconds(5),
                ednsSize: UInt16 = 4096, seed: UInt64) {
        self.resolvers = resolvers
        self.zone = zone
        self.key = key
        self.rate = rate
        self.count = count
        self.uploadCharacters = uploadCharacters
        self.downloadBytes = downloadBytes
        self.recordType = recordType
        self.tmax = tmax
        self.drainRounds = drainRounds
        self.absentAfter = absentAfter
        self.ednsSize = ednsSize
        self.seed = seed
    }
}
