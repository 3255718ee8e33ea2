import CISAL

/// Systematic Reed-Solomon over GF(2^8) with a Cauchy generator matrix, computed by Intel ISA-L.
///
/// The code is MDS: any `k` of the `k + m` symbols of a group rebuild the `k` source symbols byte
/// for byte. The codec owns one group's worth of symbol memory and every table and scratch matrix it
/// needs, allocated once in `init`, so encoding and rebuilding a group allocate nothing. Fill the source
/// symbols through `symbol(_:)`, call `encode()`, and after losses call `reconstruct(lost:)`.
///
/// Not thread-safe: one codec per thread.
public final class ReedSolomon {
    /// Largest group sizes accepted. A Cauchy matrix over GF(2^8) needs k + m distinct field
    /// elements (at most 256); 128 each keeps inversions small and covers every engine's presets.
    public static let maxSourceSymbols = 128
    public static let maxRepairSymbols = 128
    public static let maxSymbolSize = 65_536

    public let k: Int
    public let m: Int
    public let symbolSize: Int

    /// (k + m) x k generator: identity on top (systematic), Cauchy rows 1 / (i xor j) below.
    private let generator: UnsafeMutablePointer<UInt8>
    /// ISA-L's expanded multiplication tables for the m repair rows (32 * k * m bytes).
    private let encodeTables: UnsafeMutablePointer<UInt8>
    private let decodeTables: UnsafeMutablePointer<UInt8>
    private let survivorRows: UnsafeMutablePointer<UInt8>
    private let inverse: UnsafeMutablePointer<UInt8>
    private let decodeRows: UnsafeMutablePointer<UInt8>
    /// The group: k + m symbols of `symbolSize` bytes, 64-byte aligned for ISA-L's SIMD loads.
    private let storage: UnsafeMutableRawPointer
    private let symbolPointers: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>
    private let inputPointers: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>
    private let outputPointers: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>
    private let lostFlags: UnsafeMutablePointer<Bool>
    private let stride: Int

    public init(k: Int, m: Int, symbolSize: Int) throws(FECError) {
        guard (1...Self.maxSourceSymbols).contains(k) else {
            throw FECError(.outOfRange, "k must be 1...\(Self.maxSourceSymbols), got \(k)")
        }
        guard (0...Self.maxRepairSymbols).contains(m) else {
            throw FECError(.outOfRange, "m must be 0...\(Self.maxRepairSymbols), got \(m)")
        }
        guard (1...Self.maxSymbolSize).contains(symbolSize) else {
            throw FECError(.outOfRange, "symbol size must be 1...\(Self.maxSymbolSize) bytes, got \(symbolSize)")
        }
        self.k = k
        self.m = m
        self.symbolSize = symbolSize
        let n = k + m
        generator = .allocate(capacity: n * k)
        encodeTables = .allocate(capacity: 32 * k * max(m, 1))
        decodeTables = .allocate(capacity: 32 * k * max(m, 1))
        survivorRows = .allocate(capacity: k * k)
        inverse = .allocate(capacity: k * k)
        decodeRows = .allocate(capacity: k * max(m, 1))
        stride = (symbolSize + 63) & ~63
        storage = .allocate(byteCount: stride * n, alignment: 64)
        storage.initializeMemory(as: UInt8.self, repeating: 0, count: stride * n)
        symbolPointers = .allocate(capacity: n)
        inputPointers = .allocate(capacity: k)
        outputPointers = .allocate(capacity: max(m, 1))
        lostFlags = .allocate(capacity: n)
        for i in 0..<n {
            symbolPointers[i] = (storage + i * stride).assumingMemoryBound(to: UInt8.self)
        }
        gf_gen_cauchy1_matrix(generator, Int32(n), Int32(k))
        if m > 0 {
            ec_init_tables(Int32(k), Int32(m), generator + k * k, encodeTables)
        }
    }

    deinit {
        generator.deallocate()
        encodeTables.deallocate()
        decodeTables.deallocate()
        survivorRows.deallocate()
        inverse.deallocate()
        decodeRows.deallocate()
        storage.deallocate()
        symbolPointers.deallocate()
        inputPointers.deallocate()
        outputPointers.deallocate()
        lostFlags.deallocate()
    }

    /// Symbol `index` of the group (0..<k source, k..<k+m repair), `symbolSize` bytes, writable.
    public func symbol(_ index: Int) -> UnsafeMutableRawBufferPointer {
        precondition(index >= 0 && index < k + m, "symbol index out of range")
        return UnsafeMutableRawBufferPointer(start: symbolPointers[index], count: symbolSize)
    }

    /// Computes the m repair symbols from the k source symbols.
    public func encode() {
        guard m > 0 else { return }
        ec_encode_data(Int32(symbolSize), Int32(k), Int32(m), encodeTables, symbolPointers, symbolPointers + k)
    }

    /// Rebuilds the lost source symbols in place from the first k symbols that survived.
    ///
    /// `lost` lists indices in 0..<k+m; lost repair symbols are not recomputed. Throws `tooManyLost`
    /// when fewer than k symbols survived.
    public func reconstruct<C: Collection<Int>>(lost: C) throws(FECError) {
        let n = k + m
        lostFlags.update(repeating: false, count: n)
        for index in lost {
            guard index >= 0, index < n, !lostFlags[index] else {
                throw FECError(.badErasure, "erasure index \(index) is out of 0..<\(n) or listed twice")
            }
            lostFlags[index] = true
        }
        guard lost.count <= m else {
            throw FECError(.tooManyLost, "\(lost.count) of \(n) symbols lost, only \(m) repair symbols")
        }
        // Rows of the generator for the first k survivors, and their symbols as decoder inputs.
        var taken = 0
        var row = 0
        while taken < k {
            if !lostFlags[row] {
                (survivorRows + taken * k).update(from: generator + row * k, count: k)
                inputPointers[taken] = symbolPointers[row]
                taken += 1
            }
            row += 1
        }
        var lostSources = 0
        for index in 0..<k where lostFlags[index] {
            outputPointers[lostSources] = symbolPointers[index]
            lostSources += 1
        }
        guard lostSources > 0 else { return }
        guard gf_invert_matrix(survivorRows, inverse, Int32(k)) == 0 else {
            throw FECError(.singular, "the surviving rows of the Cauchy matrix are singular")
        }
        // Source symbol e = row e of the inverse applied to the survivors.
        var r = 0
        for index in 0..<k where lostFlags[index] {
            (decodeRows + r * k).update(from: inverse + index * k, count: k)
            r += 1
        }
        ec_init_tables(Int32(k), Int32(lostSources), decodeRows, decodeTables)
        ec_encode_data(Int32(symbolSize), Int32(k), Int32(lostSources), decodeTables, inputPointers, outputPointers)
    }

    /// The ISA-L version this binary was built against.
    public static var libraryVersion: String { "\(CISAL_VERSION_MAJOR).\(CISAL_VERSION_MINOR).\(CISAL_VERSION_PATCH)" }
}
