public import Crypto

/// Deterministic pseudo-random bytes derived from the key, a purpose label and the probe nonce.
///
/// HMAC-SHA256 in counter mode: block i = HMAC(key, purpose || nonce || i). Both sides regenerate the
/// same bytes, so the client can check every byte of a download and the responder every character of
/// an upload without either side sending the expected content.
public enum Keystream {
    public static func bytes(key: ProbeKey, purpose: UInt8, nonce: [UInt8], count: Int) -> [UInt8] {
        guard count > 0 else { return [] }
        var out: [UInt8] = []
        out.reserveCapacity(count + 32)
        var block: UInt32 = 0
        var input = [purpose] + nonce + [0, 0, 0, 0]
        let counterIndex = input.count - 4
        while out.count < count {
            input[counterIndex] = UInt8(truncatingIfNeeded: block >> 24)
            input[counterIndex + 1] = UInt8(truncatingIfNeeded: block >> 16)
            input[counterIndex + 2] = UInt8(truncatingIfNeeded: block >> 8)
            input[counterIndex + 3] = UInt8(truncatingIfNeeded: block)
            var hmac = key.keyedHMAC
            hmac.update(input)
            hmac.finalize { out.append(contentsOf: $0) }
            block &+= 1
        }
        out.removeLast(out.count - count)
        return out
    }

    /// A truncated HMAC tag over `parts`, the authenticator of every probe and reply.
    public static func tag(key: ProbeKey, _ parts: [UInt8]..., length: Int = ProbeMeta.tagLength) -> [UInt8] {
        var hmac = key.keyedHMAC
        for part in parts { hmac.update(part) }
        return hmac.finalize { Array($0.prefix(length)) }
    }

    /// The first 8 bytes of SHA-256: the digest of what the responder received.
    public static func digest(_ bytes: [UInt8]) -> [UInt8] {
        var hasher = SHA256()
        bytes.withUnsafeBytes { hasher.update(bufferPointer: $0) }
        return hasher.finalize().withUnsafeBytes { Array($0.prefix(8)) }
    }

    /// Constant-time comparison for tags.
    public static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for i in a.indices { diff |= a[i] ^ b[i] }
        return diff == 0
    }
}

enum Purpose {
    static let uploadFiller: UInt8 = 0x01
    static let downloadPayload: UInt8 = 0x02
}
