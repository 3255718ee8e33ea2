import Crypto

/// Deterministic pseudo-random bytes derived from the key, a purpose label and the probe nonce.
///
/// The ChaCha20 keystream (RFC 8439 section 2.4) under the key's stream subkey, with the 96-bit
/// nonce `purpose || nonce || 0x000000`: the payload of ChaCha20-Poly1305 over zero bytes (section
/// 2.8), whose ciphertext is the keystream from block counter 1. Both sides regenerate the same
/// bytes, so the client can check every byte of a download and the responder every character of an
/// upload without either side sending the expected content. It replaced HMAC-SHA256 in counter
/// mode, which cost two SHA-256 finalisations per 32 bytes: 38 % of the responder's CPU in a lab
/// scan went to download payloads.
public enum Keystream {
    public static func bytes(key: ProbeKey, purpose: UInt8, nonce: [UInt8], count: Int) -> [UInt8] {
        guard count > 0 else { return [] }
        var nonceBytes = [purpose] + nonce.prefix(ProbeMeta.nonceLength)
        nonceBytes += [UInt8](repeating: 0, count: 12 - nonceBytes.count)
        // Sealing cannot fail with a 256-bit key and a 12-byte nonce; the fallback is never reached.
        guard let streamNonce = try? ChaChaPoly.Nonce(data: nonceBytes),
              let sealed = try? ChaChaPoly.seal([UInt8](repeating: 0, count: count), using: key.streamKey, nonce: streamNonce)
        else { return [UInt8](repeating: 0, count: count) }
        return Array(sealed.ciphertext)
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

    /// Whether `digest` is `digest(bytes)`, without building the digest array.
    public static func digest(of bytes: [UInt8], is digest: [UInt8]) -> Bool {
        guard digest.count == 8 else { return false }
        var hasher = SHA256()
        bytes.withUnsafeBytes { hasher.update(bufferPointer: $0) }
        return hasher.finalize().withUnsafeBytes { computed in
            for index in 0..<8 where computed[index] != digest[index] { return false }
            return true
        }
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
