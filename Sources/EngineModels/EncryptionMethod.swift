/// MasterDnsVPN's `DATA_ENCRYPTION_METHOD` (0...5), and how many bytes each adds to a frame.
///
/// Both editions: 0 none, 1 XOR (same length), 2 ChaCha20 with a 16-byte nonce in front, 3/4/5
/// AES-GCM (128/192/256-bit key) with a 12-byte nonce in front and a 16-byte tag behind.
/// Go: internal/security/codec.go (NewCodec, chachaNonceSize, aesNonceSize); Python:
/// dns_utils/DnsPacketParser.py (_chacha_encrypt, _aes_encrypt).
public enum EncryptionMethod: Int, Sendable, Hashable, Codable, CaseIterable {
    case none = 0
    case xor = 1
    case chacha20 = 2
    case aes128GCM = 3
    case aes192GCM = 4
    case aes256GCM = 5

    /// Bytes the method adds to each encrypted frame.
    public var overhead: Int {
        switch self {
        case .none, .xor: 0
        case .chacha20: 16
        case .aes128GCM, .aes192GCM, .aes256GCM: 12 + 16
        }
    }
}
