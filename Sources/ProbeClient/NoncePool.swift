import NIOConcurrencyHelpers
import OSLayer

/// Probe nonces from a CSPRNG, drawn 4 KiB at a time: one draw per 512 probes
/// instead of one per probe (the call and the kernel's per-call key setup showed up at about 3 % of
/// a closed-loop probe's cost).
final class NoncePool: Sendable {
    static let shared = NoncePool()
    static let refillBytes = 4096

    private let state = NIOLockedValueBox(State())

    private struct State {
        var bytes: [UInt8] = []
        var offset = 0
    }

    func next() -> [UInt8] {
        state.withLockedValue { state in
            let width = 8
            if state.offset + width > state.bytes.count {
                state.bytes = Self.fresh(Self.refillBytes)
                state.offset = 0
            }
            defer { state.offset += width }
            return Array(state.bytes[state.offset..<(state.offset + width)])
        }
    }

    /// `count` bytes from the kernel's CSPRNG in one read of /dev/urandom (swift-crypto's random
    /// key and the standard generator both ask getrandom for 8 bytes at a time); the standard
    /// generator if the device cannot be read.
    private static func fresh(_ count: Int) -> [UInt8] {
        var bytes = SystemCall.readFile("/dev/urandom", limit: count) ?? []
        let filled = bytes.count
        if filled < count {
            bytes = [UInt8](repeating: 0, count: count)
            var generator = SystemRandomNumberGenerator()
            for index in 0..<count { bytes[index] = UInt8.random(in: .min ... .max, using: &generator) }
        }
        return bytes
    }
}
