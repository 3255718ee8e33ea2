import FEC
import Foundation

// ISA-L 12+3 with 512-byte symbols through the Swift wrapper (FEC.ReedSolomon): the same work as the
// C anchor that scripts/bench-simulate.sh compiles with gcc -lisal: encode, then rebuild 3 lost
// source symbols (matrix inversion included) from the first 12 survivors, 200 000 times each.
let k = 12, m = 3, size = 512, iterations = 200_000
let codec = try ReedSolomon(k: k, m: m, symbolSize: size)
var state: UInt64 = 42
for i in 0..<k {
    let s = codec.symbol(i)
    for j in 0..<size {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        s[j] = UInt8(truncatingIfNeeded: state >> 56)
    }
}
let reference = (0..<k).map { Array(codec.symbol($0)) }
let lost = [0, 5, 9]

func now() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}

let t0 = now()
for _ in 0..<iterations { codec.encode() }
let t1 = now()
for _ in 0..<iterations { try codec.reconstruct(lost: lost) }
let t2 = now()
precondition((0..<k).allSatisfy { Array(codec.symbol($0)) == reference[$0] }, "rebuilt symbols differ")
let bytes = Double(k * size * iterations)
print(String(format: "    Swift wrapper 12+3, %d-byte symbols: encode %.2f us/group (%.2f GB/s), decode 3 lost %.2f us/group (%.2f GB/s)",
             size, (t1 - t0) / Double(iterations) * 1e6, bytes / (t1 - t0) / 1e9,
             (t2 - t1) / Double(iterations) * 1e6, bytes / (t2 - t1) / 1e9))
