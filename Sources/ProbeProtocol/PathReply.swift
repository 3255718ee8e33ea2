/// The responder's answer to a path probe: its receive history of a window of the stream's sequence
/// numbers, authenticated with the probe's nonce (docs/PROTOCOL.md, "Path replies").
///
/// Layout (big-endian): 0 version|kind, 1 flags (bit 0 drain), 2-5 seq, 6-9 base seq, 10 entry count n,
/// 11 reserved, 12-19 the responder's receive time of this query (microseconds since the Unix epoch),
/// 20-23 the number of first-copy arrivals of the stream so far (every entry's index is below it), then
/// n entries of 7 bytes for seqs base, base + 1, ...: copies (saturating at 255), arrival index (low 16
/// bits), age in microseconds (receive time of this query minus that of the entry's first copy), then
/// the tag HMAC-SHA256(K, 0x50 || nonce || everything before it), first 8 bytes.
public struct PathReply: Hashable, Sendable {
    public struct Entry: Hashable, Sendable {
        /// 0: the responder has not seen this seq (when the reply was made).
        public var copies: Int
        /// Receive rank of the first copy among the stream's first-copy arrivals.
        public var arrivalIndex: UInt32
        /// Responder clock of the first copy, microseconds since the Unix epoch.
        public var receivedMicros: UInt64

        public init(copies: Int, arrivalIndex: UInt32 = 0, receivedMicros: UInt64 = 0) {
            self.copies = copies
            self.arrivalIndex = arrivalIndex
            self.receivedMicros = receivedMicros
        }
    }

    public static let headerLength = 24
    public static let entryLength = 7
    /// The largest window a reply carries.
    public static let maxEntries = 32
    /// How many of a stream's latest seqs a responder keeps (docs/PROTOCOL.md): older ones cannot be drained.
    public static let historyDepth = 2048

    public static func byteCount(entries: Int) -> Int { headerLength + entries * entryLength + ProbeMeta.tagLength }

    public var drain: Bool
    public var seq: UInt32
    public var baseSeq: UInt32
    public var receivedMicros: UInt64
    /// First-copy arrivals of the stream so far, when the reply was made.
    public var arrivals: UInt32
    /// For seqs baseSeq, baseSeq + 1, ... .
    public var entries: [Entry]

    public init(drain: Bool, seq: UInt32, baseSeq: UInt32, receivedMicros: UInt64, arrivals: UInt32, entries: [Entry]) {
        self.drain = drain
        self.seq = seq
        self.baseSeq = baseSeq
        self.receivedMicros = receivedMicros
        self.arrivals = arrivals
        self.entries = entries
    }

    public func sealed(nonce: [UInt8], key: ProbeKey) -> [UInt8] {
        var b: [UInt8] = [ProbeMeta.version << 4 | ProbeKind.path.rawValue, drain ? 1 : 0]
        b.reserveCapacity(Self.byteCount(entries: entries.count))
        Self.append(seq, to: &b)
        Self.append(baseSeq, to: &b)
        b.append(UInt8(min(entries.count, 255)))
        b.append(0)
        Self.append(UInt32(truncatingIfNeeded: receivedMicros >> 32), to: &b)
        Self.append(UInt32(truncatingIfNeeded: receivedMicros), to: &b)
        Self.append(arrivals, to: &b)
        for e in entries {
            b.append(UInt8(min(e.copies, 255)))
            b.append(UInt8(truncatingIfNeeded: e.arrivalIndex >> 8))
            b.append(UInt8(truncatingIfNeeded: e.arrivalIndex))
            let age = e.copies > 0 && receivedMicros >= e.receivedMicros ? receivedMicros - e.receivedMicros : 0
            Self.append(UInt32(min(age, UInt64(UInt32.max))), to: &b)
        }
        return b + Keystream.tag(key: key, [0x50], nonce, b)
    }

    /// Authenticates and reads a reply at the start of `bytes` (a download payload may pad it).
    public static func open(_ bytes: ArraySlice<UInt8>, nonce: [UInt8], key: ProbeKey) throws(ProbeError) -> PathReply {
        let b = Array(bytes)
        guard b.count >= byteCount(entries: 0) else { throw ProbeError(.malformedReply, "path reply of \(b.count) bytes") }
        let n = Int(b[10])
        let end = headerLength + n * entryLength
        guard n <= maxEntries, b.count >= end + ProbeMeta.tagLength else {
            throw ProbeError(.malformedReply, "path reply of \(b.count) bytes cannot hold \(n) entries")
        }
        guard Keystream.equal(Keystream.tag(key: key, [0x50], nonce, Array(b[0..<end])), Array(b[end..<(end + ProbeMeta.tagLength)])) else {
            throw ProbeError(.badTag, "path reply tag does not verify")
        }
        guard b[0] == ProbeMeta.version << 4 | ProbeKind.path.rawValue, b[1] & 0xFE == 0, b[11] == 0 else {
            throw ProbeError(.malformedReply, "path reply header \(b[0]) \(b[1]) \(b[11])")
        }
        func u32(_ i: Int) -> UInt32 { UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3]) }
        let rx = UInt64(u32(12)) << 32 | UInt64(u32(16))
        let arrivals = u32(20)
        var entries: [Entry] = []
        entries.reserveCapacity(n)
        for k in 0..<n {
            let o = headerLength + k * entryLength
            let copies = Int(b[o])
            guard copies > 0 else {
                entries.append(Entry(copies: 0))
                continue
            }
            // Every entry's index is below the arrival count: unwrap its low 16 bits under it.
            let low = UInt32(b[o + 1]) << 8 | UInt32(b[o + 2])
            let newest = arrivals &- 1
            let behind = (newest &- low) & 0xFFFF
            let age = UInt64(u32(o + 3))
            entries.append(Entry(copies: copies, arrivalIndex: newest &- behind, receivedMicros: rx >= age ? rx - age : 0))
        }
        return PathReply(drain: b[1] & 1 == 1, seq: u32(2), baseSeq: u32(6), receivedMicros: rx, arrivals: arrivals,
                         entries: entries)
    }

    private static func append(_ v: UInt32, to b: inout [UInt8]) {
        b.append(UInt8(truncatingIfNeeded: v >> 24))
        b.append(UInt8(truncatingIfNeeded: v >> 16))
        b.append(UInt8(truncatingIfNeeded: v >> 8))
        b.append(UInt8(truncatingIfNeeded: v))
    }
}
