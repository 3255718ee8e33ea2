/// The responder's answer to `echo` and `upload` probes, carried as one TXT string of 20 bytes.
///
/// Layout: version|kind, integrity, received character count (u16), digest of the received characters
/// (8 bytes of SHA-256), tag (8 bytes of HMAC over nonce and the first 12 bytes).
public struct ProbeReply: Hashable, Sendable {
    public static let byteCount = 20

    public var kind: ProbeKind
    public var integrity: ProbeName.Integrity
    public var receivedCharacters: Int
    public var digest: [UInt8]

    public init(kind: ProbeKind, integrity: ProbeName.Integrity, receivedCharacters: Int, digest: [UInt8]) {
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
    }

    public func sealed(nonce: [UInt8], key: ProbeKey) -> [UInt8] {
        let b = body
        return b + Keystream.tag(key: key, [0x52], nonce, b)
    }

    /// Authenticates and reads a reply to the probe that carried `nonce`.
    public static func open(_ bytes: [UInt8], nonce: [UInt8], key: ProbeKey) throws(ProbeError) -> ProbeReply {
        guard bytes.count == byteCount else { throw ProbeError(.malformedReply, "reply is \(bytes.count) bytes, expected \(byteCount)") }
        let body = Array(bytes[0..<12])
        guard Keystream.equal(Keystream.tag(key: key, [0x52], nonce, body), Array(bytes[12...])) else {
            throw ProbeError(.badTag, "reply tag does not verify")
        }
        guard bytes[0] >> 4 == ProbeMeta.version, let kind = ProbeKind(rawValue: bytes[0] & 0x0F),
              let integrity = ProbeName.Integrity(rawValue: bytes[1]) else {
            throw ProbeError(.malformedReply, "reply header \(bytes[0]) \(bytes[1])")
        }
        return ProbeReply(kind: kind, integrity: integrity, receivedCharacters: Int(bytes[2]) << 8 | Int(bytes[3]),
                          digest: Array(bytes[4..<12]))
    }
}
