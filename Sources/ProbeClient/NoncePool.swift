import Glibc
import NIOConcurrencyHelpers

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
        var bytes = [UInt8](repeating: 0, count: count)
        let descriptor = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
        var filled = 0
        if descriptor >= 0 {
            defer { close(descriptor) }
            while filled < count {
                let n = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + filled, count - filled) }
                guard n > 0 else { break }
                filled += n
            }
        }
        if filled < count {
            var generator = SystemRandomNumberGenerator()
            for index in 0..<count { bytes[index] = UInt8.random(in: .min ... .max, using: &generator) }
        }
        return bytes
    }
}
