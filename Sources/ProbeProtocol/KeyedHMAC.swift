import Crypto

/// HMAC-SHA256 (RFC 2104) over swift-crypto's SHA-256, with both pad blocks absorbed once per key.
///
/// swift-crypto's `HMAC<SHA256>` computes the same function, but it is generic over the hash and
/// its `update` over `DataProtocol`, neither specialisable from another module: on the 20–40 byte
/// inputs of a probe that generic path cost more than the hashing (about 11 % of a closed-loop
/// probe in `perf`). This type calls `SHA256.update(bufferPointer:)` directly. `KeyedHMACTests`
/// checks it against `HMAC<SHA256>` byte for byte.
struct KeyedHMAC: @unchecked Sendable {
    /// SHA-256's block size in bytes (the B of RFC 2104 section 2).
    static let blockSize = 64

    private var inner: SHA256
    private let outer: SHA256

    init(key: [UInt8]) {
        // RFC 2104 section 3: a key longer than the block is hashed first; a shorter one is zero-padded.
        var block = key.count > Self.blockSize ? Array(SHA256.hash(data: key)) : key
        block += [UInt8](repeating: 0, count: Self.blockSize - block.count)
        var inner = SHA256()
        block.map { $0 ^ 0x36 }.withUnsafeBytes { inner.update(bufferPointer: $0) }
        var outer = SHA256()
        block.map { $0 ^ 0x5c }.withUnsafeBytes { outer.update(bufferPointer: $0) }
        self.inner = inner
        self.outer = outer
    }

    mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { inner.update(bufferPointer: $0) }
    }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        inner.update(bufferPointer: bytes)
    }

    /// Hands the 32-byte MAC to `body` without copying it into an array first.
    func finalize<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        var outer = self.outer
        inner.finalize().withUnsafeBytes { outer.update(bufferPointer: $0) }
        return outer.finalize().withUnsafeBytes(body)
    }
}
