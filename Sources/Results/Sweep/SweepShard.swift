/// One of N disjoint parts of a sweep's permutation (ZMap's `--shards N --shard I`): the walk
/// positions p with p mod N = I. The N shards of one seed together walk every position once.
public struct SweepShard: Sendable, Hashable, Codable, CustomStringConvertible {
    /// 0 ..< count.
    public var index: UInt64
    public var count: UInt64

    public static let whole = SweepShard(index: 0, count: 1)

    public init(index: UInt64, count: UInt64) {
        self.index = index
        self.count = count
    }

    /// `I/N` with 0 <= I < N <= 65536; nil otherwise.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let i = UInt64(parts[0]), let n = UInt64(parts[1]), n >= 1, n <= 65_536, i < n else { return nil }
        self.init(index: i, count: n)
    }

    public var description: String { "\(index)/\(count)" }

    /// The first position of this shard at or after `position`.
    public func align(_ position: UInt64) -> UInt64 {
        let r = position % count
        return r <= index ? position - r + index : position - r + count + index
    }

    public func contains(position: UInt64) -> Bool { position % count == index }
}
