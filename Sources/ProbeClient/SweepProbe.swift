public import Base
public import DNSWire
import ProbeProtocol
public import Results

/// What one answer to a sweep probe says.
public struct SweepAnswer: Sendable, Hashable, Codable {
    /// The address the probe was sent to, read back from the probe's own authenticated name.
    public var address: String
    /// Where the answer came from, when it is not `address` (a resolver answering from another address).
    public var from: String?
    /// nil: the responder's own authenticated echo came back (an honest path to the tunnel domain).
    public var failure: ProbeFailure?
    public var detail: String?
    public var rttMs: Double?
    public var responseSize: Int
    /// The pass (`--passes`) whose probe this answers; nil: the first.
    public var pass: Int?
    /// True when the address was probed as the neighbour of an answering one (`--expand-neighbours`).
    public var viaNeighbour: Bool?
    /// Whether the address goes on to the MTU scan: any answer but REFUSED (the scan's own reachability rule).
    public var answering: Bool { failure != .refused }

    public init(address: String, from: String?, failure: ProbeFailure?, detail: String?, rttMs: Double?, responseSize: Int) {
        self.address = address
        self.from = from
        self.failure = failure
        self.detail = detail
        self.rttMs = rttMs
        self.responseSize = responseSize
    }

    /// The IPv4 address as a number (0 for an IPv6 one: `ip` names both).
    var value: UInt32 { SweepRanges.parseIPv4(address[...]) ?? 0 }
    /// The address (no parse failure: it was made from the probe's own name).
    public var ip: IPAddress { SweepRanges.address(address) ?? .v4(0) }
}

/// The sweep's probe: the scan's echo probe (48 characters, kind `echo`, one TXT question under the
/// tunnel domain), whose 8-byte nonce names the target instead of being random: 2 bytes of run salt,
/// the 16-bit send time in milliseconds, the 4-byte IPv4 address. The nonce sits in the meta block,
/// which the key's HMAC tag authenticates, and every answer echoes the question, so an answer is
/// matched to its address by reading its own name, with no table of probes in flight; an answer whose
/// name does not verify under the key (or carries another run's salt) is not ours and is dropped.
/// An IPv6 target does not fit in 4 bytes: its probe carries the salt with the top bit flipped
/// (`ipv6Mark`) and the target's index among the sweep's IPv6 addresses (`ranges`, at most 2^24).
///
/// The tag is the protocol's HMAC-SHA256 (truncated to 8 bytes), not a cheaper keyed function: the
/// responder checks it before it answers with its authenticated echo, so another function would be
/// another protocol version for every deployed `serve`. Without the key a sender off the path sees
/// no probe and must guess the tag of a name it makes up (2^-64 per try); a sender on the path can
/// only answer the probes it saw, as it could ZMap's. Its cost is kept down instead: the key's pads
/// and the zone are absorbed once (`MetaSealer`) and each probe is sealed in place.
public struct SweepProbe: Sendable {
    public let prober: Prober
    public let zone: DNSName
    public let salt: UInt16
    /// The sweep's ranges: an IPv6 answer's index is read back into its address through them.
    public let ranges: SweepRanges
    static let ipv6Mark: UInt16 = 0x8000

    /// The query with its probe characters and id left to fill: every sweep query is the same
    /// bytes but for those (one label of the 48 meta characters right after the header, the rest
    /// the zone, the type and EDNS). nil when the layout is not that one (then `query` is used).
    private let template: [UInt8]?
    /// The key's HMAC with the zone absorbed: each probe's tag hashes its 22 bytes only.
    private let sealer: MetaSealer

    public init(prober: Prober, zone: DNSName, salt: UInt16, ranges: SweepRanges = SweepRanges()) {
        self.prober = prober
        self.zone = zone
        self.salt = salt
        self.ranges = ranges
        sealer = MetaSealer(zone: zone, key: prober.key)
        template = Self.template(prober: prober, zone: zone, salt: salt)
    }

    private static func template(prober: Prober, zone: DNSName, salt: UInt16) -> [UInt8]? {
        let probe = SweepProbe(prober: prober, zone: zone, salt: salt, ranges: SweepRanges(), template: nil)
        guard let bytes = probe.query(for: 0, millis: 0, id: 0) else { return nil }
        let chars = probe.meta(for: 0, millis: 0).sealed(zone: zone, key: prober.key)
        let end = 13 + chars.count
        guard chars.count <= 63, bytes.count > end, bytes[12] == UInt8(chars.count), Array(bytes[13..<end]) == chars else { return nil }
        return bytes
    }

    private init(prober: Prober, zone: DNSName, salt: UInt16, ranges: SweepRanges, template: [UInt8]?) {
        self.prober = prober
        self.zone = zone
        self.salt = salt
        self.ranges = ranges
        self.template = template
        sealer = MetaSealer(zone: zone, key: prober.key)
    }

    private func meta(for address: UInt32, millis: UInt16, ipv6: Bool = false) -> ProbeMeta {
        ProbeMeta(kind: .echo, encoding: prober.encoding,
                  nonce: Self.nonce(salt: ipv6 ? salt ^ Self.ipv6Mark : salt, millis: millis, address: address),
                  totalCharacters: ProbeMeta.characterCount)
    }

    /// Writes the query for the IPv6 address at sweep index `index` (`ranges.isIPv6(index:)`) into `slot`.
    public func write(forIPv6Index index: UInt64, millis: UInt16, id: UInt16, into slot: UnsafeMutableRawBufferPointer) -> Int? {
        write(for: UInt32(truncatingIfNeeded: index - ranges.ipv4Total), ipv6: true, millis: millis, id: id, into: slot)
    }

    /// Writes the query for `address` into `slot` and returns its length (nil: it does not fit or
    /// cannot be built). The same bytes as `query`, made from the template: the send path's hot
    /// loop, where building the name and serializing the message per probe dominated the profile.
    public func write(for address: UInt32, millis: UInt16, id: UInt16, into slot: UnsafeMutableRawBufferPointer) -> Int? {
        write(for: address, ipv6: false, millis: millis, id: id, into: slot)
    }

    private func write(for address: UInt32, ipv6: Bool, millis: UInt16, id: UInt16, into slot: UnsafeMutableRawBufferPointer) -> Int? {
        guard let template else {
            guard let bytes = query(for: address, ipv6: ipv6, millis: millis, id: id), bytes.count <= slot.count else { return nil }
            slot.copyBytes(from: bytes)
            return bytes.count
        }
        guard template.count <= slot.count, let base = slot.baseAddress else { return nil }
        slot.copyBytes(from: template)
        slot[0] = UInt8(id >> 8)
        slot[1] = UInt8(id & 0xFF)
        // The nonce as `nonce(salt:millis:address:)` lays it out, sealed straight into the label.
        let mark = ipv6 ? salt ^ Self.ipv6Mark : salt
        let nonce = UInt64(mark) << 48 | UInt64(millis) << 32 | UInt64(address)
        sealer.writeEcho(nonce: nonce, encoding: prober.encoding, totalCharacters: ProbeMeta.characterCount, into: base + 13)
        return template.count
    }

    static func nonce(salt: UInt16, millis: UInt16, address: UInt32) -> [UInt8] {
        [UInt8(salt >> 8), UInt8(salt & 0xFF), UInt8(millis >> 8), UInt8(millis & 0xFF),
         UInt8(address >> 24), UInt8(address >> 16 & 0xFF), UInt8(address >> 8 & 0xFF), UInt8(address & 0xFF)]
    }

    /// The query datagram for `address`, sent at `millis` (ms, modulo 65536); `id` is its DNS id.
    public func query(for address: UInt32, ipv6: Bool = false, millis: UInt16, id: UInt16) -> [UInt8]? {
        let meta = meta(for: address, millis: millis, ipv6: ipv6)
        guard let name = try? ProbeName.build(meta: meta, zone: zone, key: prober.key),
              var bytes = try? prober.message(name: name, type: .txt), bytes.count >= 2 else { return nil }
        bytes[0] = UInt8(id >> 8)
        bytes[1] = UInt8(id & 0xFF)
        return bytes
    }

    /// Reads an answer that arrived from `source` at `millis`: nil when it is not an answer to one of
    /// this run's probes.
    public func match(_ datagram: [UInt8], source: UInt32, millis: UInt16) -> SweepAnswer? {
        match(datagram, source: .v4(source), millis: millis)
    }

    /// `match` for an answer from an IPv4 or IPv6 `source`.
    public func match(_ datagram: [UInt8], source: IPAddress, millis: UInt16) -> SweepAnswer? {
        guard let message = try? DNSMessage(parsing: datagram), message.header.isResponse,
              message.questions.count == 1, message.questions[0].type == .txt,
              let received = try? ProbeName.read(message.questions[0].name, zone: zone, key: prober.key),
              received.meta.kind == .echo, received.meta.nonce.count == ProbeMeta.nonceLength else { return nil }
        let nonce = received.meta.nonce
        let mark = UInt16(nonce[0]) << 8 | UInt16(nonce[1])
        let value = UInt32(nonce[4]) << 24 | UInt32(nonce[5]) << 16 | UInt32(nonce[6]) << 8 | UInt32(nonce[7])
        let target: IPAddress
        if mark == salt {
            target = .v4(value)
        } else if mark == salt ^ Self.ipv6Mark, UInt64(value) < ranges.ipv6Total {
            let a = ranges.address6(at: ranges.ipv4Total + UInt64(value))
            target = .v6(UInt64(truncatingIfNeeded: a >> 64), UInt64(truncatingIfNeeded: a))
        } else {
            return nil
        }
        let sentMillis = UInt16(nonce[2]) << 8 | UInt16(nonce[3])
        let rtt = UInt64(millis &- sentMillis) * 1_000_000
        let sent = ProbeName.characters(meta: received.meta, zone: zone, key: prober.key)
        let probe = Prober.PreparedUpload(bytes: [], question: DNSQuestion(name: message.questions[0].name, type: .txt),
                                          nonce: nonce, sent: sent)
        let outcome = prober.judge(.response(datagram, rttNanos: rtt), for: probe)
        return SweepAnswer(address: SweepRanges.describe(target), from: source == target ? nil : SweepRanges.describe(source),
                           failure: outcome.failure, detail: outcome.detail,
                           rttMs: Double(rtt) / 1e6, responseSize: datagram.count)
    }
}
