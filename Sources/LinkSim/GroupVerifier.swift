import Base
import FEC
import Foundation

/// Encodes and rebuilds real groups through ISA-L for a sample of the erasure patterns the simulation
/// met, and compares the rebuilt symbols with the originals byte for byte.
///
/// The simulation itself decides recoverability by counting (MDS: any k of k + m); this is the check
/// that the real code does what the count assumes, and where encode and decode CPU time come from.
public struct GroupVerifier {
    public struct Tally: Sendable, Hashable, Codable {
        public var groups = 0
        public var mismatches = 0
        public var encodeNs: UInt64 = 0
        public var decodeNs: UInt64 = 0
        public var symbolSize = 0

        public init() {}

        public mutating func add(_ other: Tally) {
            groups += other.groups
            mismatches += other.mismatches
            encodeNs += other.encodeNs
            decodeNs += other.decodeNs
            symbolSize = max(symbolSize, other.symbolSize)
        }
    }

    public let limit: Int
    public let symbolSize: Int
    public private(set) var tally = Tally()
    private var codecs: [Int: ReedSolomon] = [:]
    private var originals: [[UInt8]] = []
    private var rng: SplitMix64

    public init(limit: Int, symbolSize: Int, seed: UInt64) {
        self.limit = limit
        self.symbolSize = symbolSize
        rng = SplitMix64(seed: seed ^ 0x15A1_15A1)
        tally.symbolSize = symbolSize
    }

    public var wantsMore: Bool { tally.groups < limit }

    /// Encodes a group of `k` random source symbols into `m` repair symbols, erases `lost`, rebuilds,
    /// and compares. Returns false on a mismatch (or when ISA-L refused a pattern the count said was fine).
    @discardableResult
    public mutating func verify(k: Int, m: Int, lost: some Collection<Int>) -> Bool {
        let key = k << 8 | m
        let codec: ReedSolomon
        if let c = codecs[key] {
            codec = c
        } else {
            guard let c = try? ReedSolomon(k: k, m: m, symbolSize: symbolSize) else {
                tally.groups += 1
                tally.mismatches += 1
                return false
            }
            codecs[key] = c
            codec = c
        }
        if originals.count < k { originals += Array(repeating: [UInt8](repeating: 0, count: symbolSize), count: k - originals.count) }
        for i in 0..<k {
            let symbol = codec.symbol(i)
            for j in stride(from: 0, to: symbolSize, by: 8) {
                let word = rng.next()
                for b in 0..<min(8, symbolSize - j) { symbol[j + b] = UInt8(truncatingIfNeeded: word >> (8 * b)) }
            }
            originals[i].withUnsafeMutableBytes { $0.copyMemory(from: UnsafeRawBufferPointer(symbol)) }
        }
        let t0 = Self.cpuNanoseconds()
        codec.encode()
        let t1 = Self.cpuNanoseconds()
        for i in lost { codec.symbol(i).initializeMemory(as: UInt8.self, repeating: 0) }
        let t2 = Self.cpuNanoseconds()
        var ok = true
        do {
            try codec.reconstruct(lost: lost)
        } catch {
            ok = false
        }
        let t3 = Self.cpuNanoseconds()
        if ok {
            for i in 0..<k where !codec.symbol(i).elementsEqual(originals[i]) {
                ok = false
                break
            }
        }
        tally.groups += 1
        tally.encodeNs += t1 - t0
        tally.decodeNs += t3 - t2
        if !ok { tally.mismatches += 1 }
        return ok
    }

    /// CPU time of this thread (CLOCK_THREAD_CPUTIME_ID), so other processes on the machine do not count.
    static func cpuNanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}
