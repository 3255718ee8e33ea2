import Crypto
import _CryptoExtras
import Foundation

/// MasterDnsVPN's `DATA_ENCRYPTION_METHOD` applied to one frame, as its Go edition does it
/// (internal/security/codec.go at commit bc69a58: NewCodec, deriveKey, xorCrypto, chachaEncrypt,
/// makeAESEncryptor). The key is the text of the server's key file, whitespace trimmed
/// (internal/security/encryption_key.go).
///
/// - 0: none. 1: XOR with the key text cut or zero-padded to 32 bytes, repeated from each frame's
///   first byte. 2: ChaCha20 without authentication, key SHA-256(text), a 16-byte nonce in front
///   whose first 4 bytes are the little-endian block counter. 3, 4, 5: AES-GCM with a 12-byte nonce in
///   front and the 16-byte tag behind; key MD5(text) (3), the text cut or zero-padded to 24 bytes (4),
///   SHA-256(text) (5).
public struct MasterDnsVPNCipher: Sendable {
    public let method: Int
    let key: [UInt8]

    public enum Failure: Error, Equatable, Sendable {
        case unknownMethod(Int)
        case emptyKey
        /// The ciphertext is shorter than the method's nonce (and tag).
        case tooShort(Int)
        /// AES-GCM's tag did not verify: another key, another method, or altered bytes.
        case authenticationFailed
    }

    public init(method: Int, keyText: String) throws(Failure) {
        guard (0...5).contains(method) else { throw .unknownMethod(method) }
        let text = Array(keyText.trimmingCharacters(in: .whitespacesAndNewlines).utf8)
        guard !text.isEmpty else { throw .emptyKey }
        self.method = method
        switch method {
        case 2, 5: key = Array(SHA256.hash(data: text))
        case 3: key = Array(Insecure.MD5.hash(data: text))
        case 4: key = Self.padded(text, to: 24)
        default: key = Self.padded(text, to: 32)
        }
    }

    static func padded(_ text: [UInt8], to count: Int) -> [UInt8] {
        Array(text.prefix(count)) + [UInt8](repeating: 0, count: max(0, count - text.count))
    }

    /// Bytes the method adds to each frame.
    public var overhead: Int {
        switch method {
        case 2: 16
        case 3, 4, 5: 28
        default: 0
        }
    }

    /// `nonce` is drawn fresh for each frame (the system CSPRNG) unless a test gives one.
    public func seal(_ plain: [UInt8], nonce given: [UInt8]? = nil) -> [UInt8] {
        switch method {
        case 1: return xor(plain)
        case 2:
            let nonce = given ?? Self.random(16)
            return nonce + chacha(plain, nonce: nonce)
        case 3, 4, 5:
            let nonce = given ?? Self.random(12)
            // Only a wrong nonce length can make these throw, and it is always 12 here.
            guard let n = try? AES.GCM.Nonce(data: nonce),
                  let box = try? AES.GCM.seal(plain, using: SymmetricKey(data: key), nonce: n) else { return [] }
            return nonce + Array(box.ciphertext) + Array(box.tag)
        default: return plain
        }
    }

    public func open(_ sealed: [UInt8]) throws(Failure) -> [UInt8] {
        switch method {
        case 1: return xor(sealed)
        case 2:
            guard sealed.count > 16 else { throw .tooShort(sealed.count) }
            return chacha(Array(sealed[16...]), nonce: Array(sealed[..<16]))
        case 3, 4, 5:
            guard sealed.count > 28 else { throw .tooShort(sealed.count) }
            do {
                let box = try AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: sealed[..<12]),
                                                ciphertext: sealed[12..<(sealed.count - 16)],
                                                tag: sealed[(sealed.count - 16)...])
                return Array(try AES.GCM.open(box, using: SymmetricKey(data: key)))
            } catch { throw .authenticationFailed }
        default: return sealed
        }
    }

    func xor(_ data: [UInt8]) -> [UInt8] {
        var out = data
        for i in out.indices { out[i] ^= key[i % key.count] }
        return out
    }

    func chacha(_ data: [UInt8], nonce: [UInt8]) -> [UInt8] {
        let counter = UInt32(nonce[0]) | UInt32(nonce[1]) << 8 | UInt32(nonce[2]) << 16 | UInt32(nonce[3]) << 24
        guard !data.isEmpty, let n = try? Insecure.ChaCha20CTR.Nonce(data: nonce[4..<16]),
              let c = try? Insecure.ChaCha20CTR.Counter(offset: counter),
              let out = try? Insecure.ChaCha20CTR.encrypt(data, using: SymmetricKey(data: key), counter: c, nonce: n)
        else { return [] }
        return Array(out)
    }

    static func random(_ count: Int) -> [UInt8] {
        var g = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &g) }
    }
}
