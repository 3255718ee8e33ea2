import Base
public import Results

/// The sweeps of the N shards of one permutation (`sweep --shard I/N`, one per machine), joined
/// into one: the answering addresses of all of them, with each shard's vantage. The shards must
/// share the seed, the ranges and N; a shard given twice is an error, a missing one is named.
public enum SweepShardMerge {
    /// What one shard's sweep report says.
    public struct Part: Sendable, Hashable {
        public var source: String
        public var vantage: String?
        public var seed: UInt64
        public var shard: SweepShard
        public var rangesDigest: String?
        public var complete: Bool
        public var answering: [String]

        public init(source: String, vantage: String?, seed: UInt64, shard: SweepShard, rangesDigest: String?,
                    complete: Bool, answering: [String]) {
            self.source = source
            self.vantage = vantage
            self.seed = seed
            self.shard = shard
            self.rangesDigest = rangesDigest
            self.complete = complete
            self.answering = answering
        }
    }

    public struct Shard: Sendable, Hashable, Codable {
        public var source: String
        public var vantage: String?
        public var shard: SweepShard
        public var complete: Bool
        public var answering: Int
    }

    /// The merged sweep (sweep.json of `report merge`).
    public struct Merged: Sendable, Hashable, Codable {
        public var schema = "tunnelprobe.sweep/merged-1"
        public var seed: UInt64
        public var shardCount: UInt64
        public var shards: [Shard]
        /// Shard indexes of 0 ..< shardCount no report was given for.
        public var missingShards: [UInt64]
        /// Every shard given, and each walked its part to the end.
        public var complete: Bool
        /// The union of the shards' answering addresses, in address order.
        public var answering: [String]
    }

    public enum Failure: Error, Sendable, Hashable, CustomStringConvertible {
        case nothing
        case seedDiffers(String, UInt64, UInt64)
        case shardCountDiffers(String, UInt64, UInt64)
        case rangesDiffer(String)
        case shardTwice(String, SweepShard)

        public var description: String {
            switch self {
            case .nothing: "no sweep report to merge"
            case .seedDiffers(let s, let a, let b): "\(s): seed \(b) differs from the first shard's \(a): not shards of one sweep"
            case .shardCountDiffers(let s, let a, let b): "\(s): a shard of \(b) differs from the first's \(a) shards"
            case .rangesDiffer(let s): "\(s): its ranges differ from the first shard's"
            case .shardTwice(let s, let shard): "\(s): shard \(shard) is given twice"
            }
        }
    }

    public static func merge(_ parts: [Part]) throws(Failure) -> Merged {
        guard let first = parts.first else { throw .nothing }
        var seen: Set<UInt64> = []
        var answering: Set<IPAddress> = []
        var shards: [Shard] = []
        for p in parts {
            guard p.seed == first.seed else { throw .seedDiffers(p.source, first.seed, p.seed) }
            guard p.shard.count == first.shard.count else { throw .shardCountDiffers(p.source, first.shard.count, p.shard.count) }
            guard p.rangesDigest == first.rangesDigest else { throw .rangesDiffer(p.source) }
            guard seen.insert(p.shard.index).inserted else { throw .shardTwice(p.source, p.shard) }
            for a in p.answering { if let v = SweepRanges.address(a) { answering.insert(v) } }
            shards.append(Shard(source: p.source, vantage: p.vantage, shard: p.shard, complete: p.complete, answering: p.answering.count))
        }
        shards.sort { $0.shard.index < $1.shard.index }
        let missing = first.shard.count > 65_536 ? [] : (0..<first.shard.count).filter { !seen.contains($0) }
        return Merged(seed: first.seed, shardCount: first.shard.count, shards: shards, missingShards: missing,
                      complete: missing.isEmpty && shards.allSatisfy(\.complete),
                      answering: answering.sorted().map { SweepRanges.describe($0) })
    }
}
