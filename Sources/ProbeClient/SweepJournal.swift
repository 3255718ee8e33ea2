import Base
import Foundation
import Synchronization
public import Results

/// The files a sweep keeps beside its report, so that it streams and resumes:
/// - `sweep.state`: the seed, the ranges' digest and the checkpoint (written ahead of each
///   batch of probes, then settled when the last answers have had their timeout);
/// - `sweep.jsonl`: one `SweepAnswer` per line, appended as answers arrive;
/// - `pairs.jsonl`: one `ScanPair` per line, appended as each MTU scan of an answering address ends.
/// A line cut short by a hard kill does not decode and is skipped on resume.
public final class SweepJournal: Sendable {
    public static let stateFile = "sweep.state"
    public static let answersFile = "sweep.jsonl"
    public static let pairsFile = "pairs.jsonl"

    public struct State: Codable, Sendable, Hashable {
        public var seed: UInt64
        /// The key that nonces carry per run; the same on resume, so late answers still match.
        public var salt: UInt16
        public var rangesDigest: String
        public var rangesTotal: UInt64
        public var sample: UInt64?
        public var checkpoint: SweepCheckpoint
        /// Runs of this sweep so far (1 for a sweep never resumed).
        public var runs: Int
        /// `--passes`: how many, the one in progress (1-based), where the first one's walk ended
        /// (later passes walk no further) and the addresses each finished pass sent. nil: one pass.
        public var passes: Int?
        public var pass: Int?
        public var firstPassEnd: UInt64?
        public var passSent: [UInt64]?
        /// `--shard`: the part of the permutation this sweep walks (nil: all of it).
        public var shard: SweepShard?
        /// `--expand-neighbours`: the prefix length (nil: none).
        public var neighbourPrefix: Int?

        public init(seed: UInt64, salt: UInt16, rangesDigest: String, rangesTotal: UInt64, sample: UInt64?,
                    checkpoint: SweepCheckpoint, runs: Int) {
            self.seed = seed
            self.salt = salt
            self.rangesDigest = rangesDigest
            self.rangesTotal = rangesTotal
            self.sample = sample
            self.checkpoint = checkpoint
            self.runs = runs
        }
    }

    public let directory: String
    private let files: Mutex<(answers: FileHandle?, pairs: FileHandle?)>

    public init(directory: String) throws(SweepError) {
        self.directory = directory
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw SweepError(description: "cannot create \(directory): \(error.localizedDescription)")
        }
        func openLog(_ name: String) throws(SweepError) -> FileHandle {
            let path = directory + "/" + name
            if !FileManager.default.fileExists(atPath: path) { _ = FileManager.default.createFile(atPath: path, contents: nil) }
            guard let handle = FileHandle(forWritingAtPath: path) else { throw SweepError(description: "cannot open \(path) for writing") }
            _ = handle.seekToEndOfFile()
            return handle
        }
        let answers = try openLog(Self.answersFile)
        let pairs = try openLog(Self.pairsFile)
        files = Mutex((answers: answers as FileHandle?, pairs: pairs as FileHandle?))
    }

    /// A digest of the merged blocks (FNV-1a 64): a resume over other ranges is refused.
    public static func digest(_ ranges: SweepRanges) -> String {
        var h: UInt64 = 0xCBF2_9CE4_8422_2325
        func mix(_ values: [UInt64]) {
            for v in values {
                for shift in stride(from: 0, to: 64, by: 8) {
                    h ^= v >> UInt64(shift) & 0xFF
                    h &*= 0x100_0000_01B3
                }
            }
        }
        for b in ranges.blocks { mix([UInt64(b.first), b.count]) }
        // IPv6 blocks after the IPv4 ones (an IPv4-only list keeps the digest it always had).
        for b in ranges.blocks6 { mix([UInt64(truncatingIfNeeded: b.first >> 64), UInt64(truncatingIfNeeded: b.first), b.count]) }
        return String(h, radix: 16)
    }

    public func readState() -> State? {
        guard let data = FileManager.default.contents(atPath: directory + "/" + Self.stateFile) else { return nil }
        return try? JSONDecoder().decode(State.self, from: data)
    }

    public func write(_ state: State) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(state) else { return }
        // Atomic (a temporary file renamed over the old one): a kill never leaves half a state.
        try? data.write(to: URL(fileURLWithPath: directory + "/" + Self.stateFile), options: .atomic)
    }

    public func readAnswers() -> [SweepAnswer] { readLines(Self.answersFile) }
    public func readPairs() -> [ScanPair] { readLines(Self.pairsFile) }

    private func readLines<T: Decodable>(_ name: String) -> [T] {
        guard let data = FileManager.default.contents(atPath: directory + "/" + name) else { return [] }
        let decoder = JSONDecoder()
        return data.split(separator: UInt8(ascii: "\n")).compactMap { try? decoder.decode(T.self, from: Data($0)) }
    }

    public func append(_ answer: SweepAnswer) { append(answer, pairs: false) }
    public func append(_ pair: ScanPair) { append(pair, pairs: true) }

    private func append<T: Encodable>(_ value: T, pairs: Bool) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard var data = try? encoder.encode(value) else { return }
        data.append(UInt8(ascii: "\n"))
        files.withLock { f in (pairs ? f.pairs : f.answers)?.write(data) }
    }

    public func close() {
        files.withLock { f in
            try? f.answers?.close()
            try? f.pairs?.close()
            f = (nil, nil)
        }
    }
}
