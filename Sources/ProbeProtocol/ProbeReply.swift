/// The responder's answer to `echo` and `upload` probes, carried as one TXT string of 20 or 24 bytes.
///
/// Layout: version|kind, integrity, received character count (u16), digest of the received characters
/// (8 bytes of SHA-256), then, in the 24-byte form, what the responder saw of the query (advertised
/// EDNS UDP size u16, flags, reserved), and last the tag (8 bytes of HMAC over nonce and every byte
/// before it). docs/PROTOCOL.md, "Replies".
public struct ProbeReply: Hashable, Sendable {
    /// The reply without `observed` (responders before the TCP listener sent only this form).
    public static let byteCount = 20
    /// The reply with `observed`.
    public static let observedByteCount = 24
    /// Every length a reply may have.
    public static let byteCounts: Set<Int> = [byteCount, observedByteCount]

    /// What the responder saw of the query it answered.
    public struct Observed: Hashable, Sendable {
        /// The EDNS UDP payload size the asker (the resolver, upstream) advertised; 0 without EDNS.
        public var advertisedSize: UInt16
        /// The query came over TCP (RFC 7766): the resolver retried a truncated answer.
        public var overTCP: Bool
        /// The responder truncates UDP answers at `advertisedSize` (`serve --edns honor`).
        public var honorsEDNS: Bool

        public init(advertisedSize: UInt16, overTCP: Bool, honorsEDNS: Bool) {
            self.advertisedSize = advertisedSize
            self.overTCP = overTCP
            self.honorsEDNS = honorsEDNS
        }

        /// The largest UDP answer the asker takes from an honouring server (512 without EDNS).
        public var udpLimit: Int { advertisedSize == 0 ? 512 : max(512, Int(advertisedSize)) }
    }

    public var kind: ProbeKind
    public var integrity: ProbeName.Integrity
    public var receivedCharacters: Int
    public var digest: [UInt8]
    public var observed: Observed?

    public init(kind: ProbeKind, integrity: ProbeName.Integrity, receivedCharacters: Int, digest: [UInt8],
                observed: Observed? = nil) {
        self.observed = observed
        self.kind = kind
        self.integrity = integrity
        self.receivedCharacters = receivedCharacters
        self.digest = digest
    }

    public init(answering received: ProbeName.Received) {
        self.init(kind: received.meta.kind, integrity: received.integrity,
                  receivedCharacters: received.characters.count, digest: Keystream.digest(received.characters))
    }

    private var body: [UInt8] {
        [ProbeMeta.version << 4 | kind.rawValue, integrity.rawValue,
         UInt8(truncatingIfNeeded: receivedCharacters >> 8), UInt8(truncatingIfNeeded: receivedCharacters)] + digest
            + (observed.map { o in
                [UInt8(o.advertisedSize >> 8), UInt8(o.advertisedSize & 0xFF),
                 (o.overTCP ? 1 : 0) | (o.honorsEDNS ? 2 : 0), 0]
            } ?? [])
    }

    public func sealed(nonce: [UInt8], key: ProbeKey) -> [UInt8] {
        let b = body
        return b + Keystream.tag(key: key, [0x52], nonce, b)
    }

    /// Authenticates and reads a reply to the probe that carried `nonce`.
    public static func open(_ bytes: [UInt8], nonce: [UInt8], key: ProbeKey) throws(ProbeError) -> ProbeReply {
        guard bytes.count == byteCount || bytes.count == observedByteCount else {
            throw ProbeError(.malformedReply, "reply is \(bytes.count) bytes, expected \(byteCount) or \(observedByteCount)")
        }
        let bodyLength = bytes.count - 8
        // The tag over the bytes in place: the arrays `sealed` builds cost a third of judging a reply
        // (perf of a closed loop, issue 27).
        var hmac = key.keyedHMAC
        withUnsafeBytes(of: UInt8(0x52)) { hmac.update($0) }
        hmac.update(nonce)
        let verifies = bytes.withUnsafeBytes { raw in
            hmac.update(UnsafeRawBufferPointer(rebasing: raw[0..<bodyLength]))
            return hmac.finalize { mac in
                var diff: UInt8 = 0
                for i in 0..<ProbeMeta.tagLength { diff |= mac[i] ^ raw[bodyLength + i] }
                return diff == 0
            }
        }
        guard verifies else { throw ProbeError(.badTag, "reply tag does not verify") }
        guard bytes[0] >> 4 == ProbeMeta.version, let kind = ProbeKind(rawValue: bytes[0] & 0x0F),
              let integrity = ProbeName.Integrity(rawValue: bytes[1]) else {
            throw ProbeError(.malformedReply, "reply header \(bytes[0]) \(bytes[1])")
        }
        var observed: Observed?
        if bodyLength == 16 {
            observed = Observed(advertisedSize: UInt16(bytes[12]) << 8 | UInt16(bytes[13]),
                                overTCP: bytes[14] & 1 != 0, honorsEDNS: bytes[14] & 2 != 0)
        }
        return ProbeReply(kind: kind, integrity: integrity, receivedCharacters: Int(bytes[2]) << 8 | Int(bytes[3]),
                          digest: Array(bytes[4..<12]), observed: observed)
    }
}
