import Base
public import Fates

/// Replays one stream of a fates file (`docs/FATES.md`, "How consumers use a stream"): the n-th
/// datagram of the direction takes the n-th fate; after the last fate it starts again from the top
/// and says so. A lost fate drops the datagram; a delivered one delays it by `delayMs` (0 when the
/// producer did not measure it) and sends `copies` copies.
///
/// Replayed delays are applied as recorded, without the FIFO clamp of `DelayModel`: if the recorded
/// path reordered, the replay reorders the same way.
public struct FateReplay: Sendable, Hashable {
    public let stream: FateStream
    private(set) var index = 0
    public private(set) var passes = 0

    /// Nil for a stream without packets (`FateTrace.validate` rejects those).
    public init?(stream: FateStream) {
        guard !stream.packets.isEmpty else { return nil }
        self.stream = stream
    }

    public struct Step: Sendable, Hashable {
        /// Position in the stream's packet list.
        public var index: Int
        /// True on the first fate of the second and every later pass.
        public var wrapped: Bool
        public var fate: PacketFate
    }

    public mutating func next() -> Step {
        let step = Step(index: index, wrapped: index == 0 && passes > 0, fate: stream.packets[index])
        index += 1
        if index == stream.packets.count {
            index = 0
            passes += 1
        }
        return step
    }
}
