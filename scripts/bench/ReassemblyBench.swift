// Driver for scripts/bench-reassembly.sh: feeds FragmentReassembler (compiled in alongside this file,
// from the working tree or from an older commit) N fragments in one of three shapes and prints the time.
// Usage: reassembly-bench SHAPE FRAGMENTS   (SHAPE: interleaved | flood | firsts)
import Foundation

enum IPAddress: Hashable { case v4(UInt32) }

struct Rng {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}

let arguments = CommandLine.arguments
guard arguments.count == 3, let fragments = Int(arguments[2]) else {
    print("usage: reassembly-bench interleaved|flood|firsts FRAGMENTS")
    exit(2)
}
func key(_ id: Int) -> FragmentReassembler.Key {
    .init(source: .v4(0xc612_0001), destination: .v4(0xc612_0002), identification: UInt32(id & 0xffff_ffff), proto: 17)
}
var r = FragmentReassembler()
var dropped = 0, complete = 0
var rng = Rng(state: 7)
let piece = [UInt8](repeating: 0x5a, count: 1480), small = [UInt8](repeating: 1, count: 8)
let start = DispatchTime.now().uptimeNanoseconds
switch arguments[1] {
case "interleaved":
    // Datagrams of 8 fragments of 1,480 bytes (a 11,840-byte DNS answer), 64 in flight, shuffled,
    // one fragment of each sent twice: 9 fragments per datagram.
    var sent = 0, group = 0
    while sent < fragments {
        var sends: [(Int, Int)] = []
        for id in (group * 64)..<((group + 1) * 64) {
            for index in 0..<8 { sends.append((id, index)) }
            sends.append((id, Int(rng.next() % 7)))
        }
        for i in stride(from: sends.count - 1, to: 0, by: -1) { sends.swapAt(i, Int(rng.next() % UInt64(i + 1))) }
        for (id, index) in sends where sent < fragments {
            sent += 1
            let outcome = piece.withUnsafeBytes {
                r.add(key: key(id), offset: index * 1480, moreFragments: index < 7, data: $0, now: Int64(group) * 1_000_000, dropped: &dropped)
            }
            if case .complete = outcome { complete += 1 }
        }
        group += 1
    }
case "flood":
    // Overlapping 8-byte fragments of one datagram that never completes (offset 8 is never sent).
    for i in 0..<fragments {
        let offset = i == 0 ? 65_520 : (i * 8) % 65_520 == 8 ? 16 : (i * 8) % 65_520
        _ = small.withUnsafeBytes { r.add(key: key(1), offset: offset, moreFragments: i != 0, data: $0, now: 0, dropped: &dropped) }
    }
case "firsts":
    // Only first fragments (a `udp port 53` capture filter keeps no others): every one a new datagram.
    for i in 0..<fragments {
        _ = piece.withUnsafeBytes { r.add(key: key(i), offset: 0, moreFragments: true, data: $0, now: Int64(i) * 10_000, dropped: &dropped) }
    }
default:
    print("unknown shape \(arguments[1])")
    exit(2)
}
let left = r.drain()
let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
print(String(format: "%.4f", seconds), complete, dropped + left)
