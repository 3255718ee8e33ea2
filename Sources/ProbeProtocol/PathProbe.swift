public import DNSWire

/// The parameters of a path probe (kind 4): which stream, which sequence number, what to send back.
///
/// Carried in the meta block's 10 parameter bytes (docs/PROTOCOL.md, "Path probes"):
/// bytes 0-2 drain flag (top bit) and stream id (23 bits), 3-6 sequence number, 7-8 download payload
/// size N, 9 record type (every supported type is below 256). The meta block is authenticated, so the
/// responder only keeps history for probes made with the key.
public struct PathProbe: Hashable, Sendable {
    public static let maxStream: UInt32 = (1 << 23) - 1

    public var stream: UInt32
    public var seq: UInt32
    /// A drain request: the responder records nothing and returns the history of the window ending at `seq`.
    public var drain: Bool
    /// Payload bytes asked for in the response; the response carries max(N, history size).
    public var downloadBytes: Int
    public var recordType: DNSType

    public init(stream: UInt32, seq: UInt32, drain: Bool = false, downloadBytes: Int = 0, recordType: DNSType = .txt) {
        self.stream = stream & Self.maxStream
        self.seq = seq
        self.drain = drain
        self.downloadBytes = downloadBytes
        self.recordType = recordType
    }

    /// The meta block of this probe; `nonce` must come from the CSPRNG (a repeated name could be cached).
    public func meta(nonce: [UInt8], encoding: LabelEncoding = .base32,
                     totalCharacters: Int = ProbeMeta.characterCount) -> ProbeMeta {
        let head = (drain ? UInt32(1) << 23 : 0) | (stream & Self.maxStream)
        let p: [UInt8] = [
            UInt8(truncatingIfNeeded: head >> 16), UInt8(truncatingIfNeeded: head >> 8), UInt8(truncatingIfNeeded: head),
            UInt8(truncatingIfNeeded: seq >> 24), UInt8(truncatingIfNeeded: seq >> 16),
            UInt8(truncatingIfNeeded: seq >> 8), UInt8(truncatingIfNeeded: seq),
            UInt8(truncatingIfNeeded: downloadBytes >> 8), UInt8(truncatingIfNeeded: downloadBytes),
            UInt8(truncatingIfNeeded: recordType.rawValue),
        ]
        return ProbeMeta(kind: .path, encoding: encoding, nonce: nonce, totalCharacters: totalCharacters, parameters: p)
    }

    /// Reads the parameters of an authenticated path meta block.
    public init(meta: ProbeMeta) throws(ProbeError) {
        guard meta.kind == .path else { throw ProbeError(.notAProbe, "probe kind \(meta.kind) is not path") }
        let p = meta.parameters
        let head = UInt32(p[0]) << 16 | UInt32(p[1]) << 8 | UInt32(p[2])
        self.init(stream: head & Self.maxStream,
                  seq: UInt32(p[3]) << 24 | UInt32(p[4]) << 16 | UInt32(p[5]) << 8 | UInt32(p[6]),
                  drain: head & (1 << 23) != 0,
                  downloadBytes: Int(p[7]) << 8 | Int(p[8]),
                  recordType: DNSType(rawValue: UInt16(p[9])))
    }

    /// Maps a query name back to its probe (stream, seq, ...) and nonce: what a relay log or a capture
    /// shows is a QNAME, and this is how it is tied to a record of a `path` run.
    public static func identify(_ name: DNSName, zone: DNSName,
                                key: ProbeKey) throws(ProbeError) -> (probe: PathProbe, nonce: [UInt8]) {
        guard let prefix = name.prefixLabels(droppingSuffix: zone), !prefix.isEmpty else {
            throw ProbeError(.notAProbe, "no labels in front of the zone")
        }
        var chars: [UInt8] = []
        for label in prefix {
            chars += label
            if chars.count >= ProbeMeta.characterCount { break }
        }
        let meta = try ProbeMeta.open(chars[...], zone: zone, key: key)
        return (try PathProbe(meta: meta), meta.nonce)
    }
}
