import CSHA256

/// HMAC-SHA256 (RFC 2104) with both pad blocks absorbed once per key.
///
/// The hash is `CSHA256`, a C value type: copying a keyed state for a new message copies its bytes
/// and allocates nothing. swift-crypto's `SHA256` keeps its state in a class, so the copy a tag
/// needs cost a heap allocation and a copy-on-write per update and per finalisation: four
/// allocations per probe, most of the 11 % of the sweep's send path (perf, issue 31) that sealing
/// took. `KeyedHMACTests` checks it against swift-crypto's `HMAC<SHA256>` byte for byte, with the
/// SHA extensions and with the portable compression.
struct KeyedHMAC: Sendable {
    /// SHA-256's block size in bytes (the B of RFC 2104 section 2).
    static let blockSize = 64

    private var inner: tp_sha256
    private let outer: tp_sha256

    init(key: [UInt8]) {
        // RFC 2104 section 3: a key longer than the block is hashed first; a shorter one is zero-padded.
        var block = key.count > Self.blockSize ? Self.digest(key) : key
        block += [UInt8](repeating: 0, count: Self.blockSize - block.count)
        var inner = tp_sha256()
        tp_sha256_init(&inner)
        block.map { $0 ^ 0x36 }.withUnsafeBytes { tp_sha256_update(&inner, $0.baseAddress, $0.count) }
        var outer = tp_sha256()
        tp_sha256_init(&outer)
        block.map { $0 ^ 0x5c }.withUnsafeBytes { tp_sha256_update(&outer, $0.baseAddress, $0.count) }
        self.inner = inner
        self.outer = outer
    }

    private static func digest(_ bytes: [UInt8]) -> [UInt8] {
        var context = tp_sha256()
        tp_sha256_init(&context)
        bytes.withUnsafeBytes { tp_sha256_update(&context, $0.baseAddress, $0.count) }
        var digest = [UInt8](repeating: 0, count: 32)
        tp_sha256_final(&context, &digest)
        return digest
    }

    mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { tp_sha256_update(&inner, $0.baseAddress, $0.count) }
    }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        tp_sha256_update(&inner, bytes.baseAddress, bytes.count)
    }

    /// Hands the 32-byte MAC to `body` without copying it into an array first.
    func finalize<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        // Four 64-bit words on the stack: the inner digest, then the MAC in its place.
        var mac: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        return withUnsafeMutableBytes(of: &mac) { raw in
            let bytes = raw.baseAddress!.assumingMemoryBound(to: UInt8.self)
            var inner = self.inner
            tp_sha256_final(&inner, bytes)
            var outer = self.outer
            tp_sha256_update(&outer, bytes, 32)
            tp_sha256_final(&outer, bytes)
            return body(UnsafeRawBufferPointer(raw))
        }
    }
}
