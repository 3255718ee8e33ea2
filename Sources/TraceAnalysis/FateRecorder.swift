import Fates

/// The per-query fates for `--export-fates` (docs/FATES.md), kept as compact columns: one entry per
/// query transaction, filled in when its response comes. Only kept when fates are asked for.
struct FateRecorder {
    private var stream: [Int32] = []
    private var sent: [Int64] = []
    private var size: [UInt16] = []
    private var delay: [Int64] = []  // -1: lost
    private var copies: [UInt8] = []
    private var streamIndex: [UInt64: Int32] = [:]
    private var streamKeys: [(resolver: Int32, domain: Int32)] = []

    mutating func query(resolver: Int32, domain: Int32, sent time: Int64, size bytes: Int) -> Int32 {
        let packed = UInt64(UInt32(bitPattern: resolver)) << 32 | UInt64(UInt32(bitPattern: domain))
        let s: Int32
        if let known = streamIndex[packed] {
            s = known
        } else {
            s = Int32(streamKeys.count)
            streamIndex[packed] = s
            streamKeys.append((resolver, domain))
        }
        stream.append(s)
        sent.append(time)
        size.append(UInt16(clamping: bytes))
        delay.append(-1)
        copies.append(0)
        return Int32(sent.count - 1)
    }

    mutating func delivered(_ i: Int32, delay d: Int64) {
        delay[Int(i)] = max(0, d)
        copies[Int(i)] = 1
    }

    mutating func copy(_ i: Int32) {
        if copies[Int(i)] < .max { copies[Int(i)] += 1 }
    }

    /// `roundTrip` streams, send times from the first query of the capture; a response after Tmax is a
    /// loss here, as RFC 7680 defines it (the recorder only hears of responses within Tmax).
    func trace(source: FateTrace.Source, resolvers: [String], domains: [String]) -> FateTrace {
        let origin = sent.min() ?? 0
        var packets = [[(Int64, PacketFate)]](repeating: [], count: streamKeys.count)
        for i in sent.indices {
            let delivered = delay[i] >= 0
            let fate = PacketFate(sentMs: Double(sent[i] - origin) / 1e6, size: Int(size[i]), delivered: delivered,
                                  delayMs: delivered ? Double(delay[i]) / 1e6 : nil,
                                  copies: copies[i] > 1 ? Int(copies[i]) : nil)
            packets[Int(stream[i])].append((sent[i], fate))
        }
        let streams = streamKeys.indices.map { s in
            // Stable sort by send time: captures from several interfaces need not be in time order.
            let ordered = packets[s].enumerated().sorted { ($0.element.0, $0.offset) < ($1.element.0, $1.offset) }.map(\.element.1)
            return FateStream(resolver: resolvers[Int(streamKeys[s].resolver)], domain: domains[Int(streamKeys[s].domain)],
                              direction: .roundTrip, packets: ordered)
        }
        return FateTrace(source: source, streams: streams)
    }
}
