@testable import ProbeClient
import Testing

@Suite struct NoncePoolTests {
    /// Across several refills every nonce is 8 bytes and none repeats (64 random bits: a repeat
    /// among 5,000 would mean the pool hands out the same bytes twice).
    @Test func noncesAreEightFreshBytes() {
        let pool = NoncePool()
        let count = 10 * NoncePool.refillBytes / 8
        var seen = Set<[UInt8]>()
        for _ in 0..<count {
            let nonce = pool.next()
            #expect(nonce.count == 8)
            seen.insert(nonce)
        }
        #expect(seen.count == count)
        // Two pools do not start from the same bytes.
        #expect(NoncePool().next() != NoncePool().next())
    }
}
