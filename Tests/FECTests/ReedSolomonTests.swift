import FEC
import Testing

@Suite struct ReedSolomonTests {
    /// Fills the source symbols with seeded bytes and returns a copy of them.
    static func fill(_ codec: ReedSolomon, seed: UInt64) -> [[UInt8]] {
        var state = seed
        var copies: [[UInt8]] = []
        for i in 0..<codec.k {
            let symbol = codec.symbol(i)
            for j in 0..<symbol.count {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                symbol[j] = UInt8(truncatingIfNeeded: state >> 56)
            }
            copies.append(Array(symbol))
        }
        return copies
    }

    static func scribble(_ codec: ReedSolomon, lost: [Int]) {
        for i in lost { codec.symbol(i).initializeMemory(as: UInt8.self, repeating: 0xEE) }
    }

    @Test(arguments: FECLevel.presets.filter(\.isEnabled))
    func everyPresetRebuildsFromAnyKOfKPlusM(level: FECLevel) throws {
        let codec = try ReedSolomon(k: level.k, m: level.m, symbolSize: 512)
        var rng = UInt64(level.k * 1000 + level.m)
        for trial in 0..<200 {
            let source = Self.fill(codec, seed: UInt64(trial) &+ rng)
            codec.encode()
            // A random erasure pattern of 1...m symbols anywhere in the group.
            rng = rng &* 2_862_933_555_777_941_757 &+ 3_037_000_493
            var indices = Array(0..<(level.k + level.m))
            for i in stride(from: indices.count - 1, to: 0, by: -1) {
                rng = rng &* 2_862_933_555_777_941_757 &+ 3_037_000_493
                indices.swapAt(i, Int(rng >> 33) % (i + 1))
            }
            let lost = Array(indices.prefix(1 + trial % level.m))
            Self.scribble(codec, lost: lost)
            try codec.reconstruct(lost: lost)
            for i in 0..<level.k { #expect(Array(codec.symbol(i)) == source[i], "symbol \(i), lost \(lost)") }
        }
    }

    @Test func losingExactlyTheFirstMSourceSymbolsAndNoneAtAll() throws {
        let codec = try ReedSolomon(k: 12, m: 3, symbolSize: 100)
        let source = Self.fill(codec, seed: 7)
        codec.encode()
        try codec.reconstruct(lost: [Int]())
        Self.scribble(codec, lost: [0, 1, 2])
        try codec.reconstruct(lost: [0, 1, 2])
        for i in 0..<12 { #expect(Array(codec.symbol(i)) == source[i]) }
    }

    @Test func moreLossesThanRepairIsRefused() throws {
        let codec = try ReedSolomon(k: 8, m: 2, symbolSize: 64)
        _ = Self.fill(codec, seed: 1)
        codec.encode()
        #expect(throws: FECError(.tooManyLost, "")) { try codec.reconstruct(lost: [0, 3, 9]) }
        #expect(throws: FECError(.badErasure, "")) { try codec.reconstruct(lost: [10]) }
        #expect(throws: FECError(.badErasure, "")) { try codec.reconstruct(lost: [1, 1]) }
    }

    @Test func boundsOfKMAndSymbolSize() throws {
        #expect(throws: FECError(.outOfRange, "")) { try ReedSolomon(k: 0, m: 2, symbolSize: 64) }
        #expect(throws: FECError(.outOfRange, "")) { try ReedSolomon(k: 129, m: 2, symbolSize: 64) }
        #expect(throws: FECError(.outOfRange, "")) { try ReedSolomon(k: 8, m: 129, symbolSize: 64) }
        #expect(throws: FECError(.outOfRange, "")) { try ReedSolomon(k: 8, m: 2, symbolSize: 0) }
        // The largest group: 128 + 128 symbols, still rebuilt byte for byte.
        let codec = try ReedSolomon(k: 128, m: 128, symbolSize: 33)
        let source = Self.fill(codec, seed: 3)
        codec.encode()
        let lost = Array(stride(from: 0, to: 256, by: 2))
        Self.scribble(codec, lost: lost)
        try codec.reconstruct(lost: lost)
        for i in 0..<128 { #expect(Array(codec.symbol(i)) == source[i]) }
    }
}
