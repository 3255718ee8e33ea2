public import Base

/// The transport protocols the decoder opens; other IP payloads are counted as undecoded.
public enum TransportProtocol: UInt8, Sendable, Hashable, Codable {
    case tcp = 6
    case udp = 17
}

/// Everything the decoder learned about one IP datagram except its transport payload, independent of
/// the link layer it was captured on.
public struct PacketHeader: Sendable, Hashable {
    /// Capture time in nanoseconds since the Unix epoch.
    public var timestampNanos: Int64
    public var source: IPAddress
    public var destination: IPAddress
    public var transport: TransportProtocol
    public var sourcePort: UInt16
    public var destinationPort: UInt16
    /// Length of the IP datagram (after reassembly when it came in fragments).
    public var ipLength: Int
    /// Length of the frame on the wire, as the capture recorded it.
    public var wireLength: Int
    /// TCP sequence number and flags; zero for UDP.
    public var tcpSequence: UInt32
    public var tcpFlags: UInt8
    /// True when the datagram was rebuilt from IP fragments.
    public var reassembled: Bool
    /// Payload bytes the capture's snap length cut off (UDP only; 0 when the payload is whole).
    public var missingBytes: Int

    public var ipVersion: Int { source.version }

    public init(
        timestampNanos: Int64, source: IPAddress, destination: IPAddress, transport: TransportProtocol,
        sourcePort: UInt16, destinationPort: UInt16, ipLength: Int, wireLength: Int,
        tcpSequence: UInt32 = 0, tcpFlags: UInt8 = 0, reassembled: Bool = false, missingBytes: Int = 0
    ) {
        self.timestampNanos = timestampNanos
        self.source = source
        self.destination = destination
        self.transport = transport
        self.sourcePort = sourcePort
        self.destinationPort = destinationPort
        self.ipLength = ipLength
        self.wireLength = wireLength
        self.tcpSequence = tcpSequence
        self.tcpFlags = tcpFlags
        self.reassembled = reassembled
        self.missingBytes = missingBytes
    }
}

/// A decoded UDP or TCP packet with its own copy of the payload, for consumers that keep packets
/// (live capture callbacks, tests). The offline analysis reads payloads in place instead.
public struct DecodedPacket: Sendable, Hashable {
    public var header: PacketHeader
    /// The UDP payload (a DNS message) or the TCP segment's data.
    public var payload: [UInt8]

    public init(header: PacketHeader, payload: [UInt8]) {
        self.header = header
        self.payload = payload
    }

    public var timestampNanos: Int64 { header.timestampNanos }
    public var ipVersion: Int { header.ipVersion }
    public var source: IPAddress { header.source }
    public var destination: IPAddress { header.destination }
    public var transport: TransportProtocol { header.transport }
    public var sourcePort: UInt16 { header.sourcePort }
    public var destinationPort: UInt16 { header.destinationPort }
}

/// Why a captured frame did not yield a UDP or TCP payload. Counted, never fatal.
public enum UndecodedReason: String, Sendable, Hashable, CaseIterable, Codable {
    /// The link type is not one the decoder knows.
    case unsupportedLinkType
    /// The frame is shorter than its link-layer header.
    case linkTruncated
    /// The link layer carries something other than IPv4/IPv6 (ARP, LLDP, ...).
    case notIP
    /// The IP header is invalid (version, header length, total length).
    case ipMalformed
    /// The frame ends before the IP datagram does, and the capture did not cut it (a corrupt record).
    case ipTruncated
    /// The capture's snap length cut the datagram before its UDP header, or cut a TCP segment or a
    /// fragment (a cut UDP datagram whose header was captured decodes, with `missingBytes`).
    case snapTruncated
    /// An IPv4/IPv6 fragment whose datagram never completed (timed out, overflowed or inconsistent).
    case fragmentUnreassembled
    /// An IPv6 extension header the decoder does not walk (or "no next header").
    case ipv6ExtensionUnsupported
    /// IP payload that is neither UDP nor TCP (ICMP, ...).
    case otherTransport
    /// The UDP or TCP header is truncated or its lengths disagree with the IP datagram.
    case transportMalformed
}

/// Counts of undecoded frames by reason.
public struct UndecodedCounts: Sendable, Hashable, Codable {
    private var counts = [Int](repeating: 0, count: UndecodedReason.allCases.count)

    public init() {}

    private static func index(_ reason: UndecodedReason) -> Int {
        UndecodedReason.allCases.firstIndex(of: reason) ?? 0
    }

    public subscript(reason: UndecodedReason) -> Int {
        get { counts[Self.index(reason)] }
        set { counts[Self.index(reason)] = newValue }
    }

    public var total: Int { counts.reduce(0, +) }

    /// The non-zero counts, keyed by reason.
    public var byReason: [String: Int] {
        var out: [String: Int] = [:]
        for reason in UndecodedReason.allCases where self[reason] > 0 { out[reason.rawValue] = self[reason] }
        return out
    }

    public mutating func add(_ other: UndecodedCounts) {
        for i in counts.indices { counts[i] += other.counts[i] }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(byReason)
    }

    public init(from decoder: any Decoder) throws {
        let map = try decoder.singleValueContainer().decode([String: Int].self)
        for (key, value) in map {
            if let reason = UndecodedReason(rawValue: key) { self[reason] = value }
        }
    }
}
