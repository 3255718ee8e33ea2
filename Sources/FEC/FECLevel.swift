import Foundation

/// One FEC setting: k source packets per group, m repair symbols, and the flush timeout after which
/// a partial group is closed and gets its repair anyway.
///
/// The four presets are the iOS client's profile contract (`fecSettings(forLevel:)`): m is
/// ceil(k x overhead). A custom level is written `k:m` in UDPspeeder's `-f x:y` convention
/// (y repair per x originals).
public struct FECLevel: Sendable, Hashable, CustomStringConvertible {
    /// The erasure code a level's groups use.
    public enum Code: String, Sendable, Hashable, Codable {
        /// Reed-Solomon (MDS): any k of the k + m symbols rebuild the group; encoded and rebuilt
        /// through ISA-L in the sampled groups.
        case reedSolomon = "reed-solomon"
        /// A RaptorQ-like fountain code, modelled and not encoded: Debian's only RaptorQ library
        /// (liblcrq, librecast, version 0.0.x) is not one a measurement should rest on, and the Swift
        /// package mirror has none. The model is RaptorQ's reception overhead: with k + h symbols
        /// received the group decodes with probability 1 - 1/256^(h+1) (Qualcomm's "RaptorQ Technical
        /// Overview", the figure the RFC 6330 code is known by; RFC 6330 section 1 promises decoding
        /// from k symbols "in most cases" and from slightly more in rare ones).
        case raptorQModel = "raptorq-model"
    }

    /// `none`, `conservative`, `balanced`, `aggressive`, `k:m` for a custom level, or `rq:k:m` for
    /// the RaptorQ model at k + m.
    public var name: String
    /// Source packets per group; 0 for `none`.
    public var k: Int
    /// Repair symbols per full group; 0 for `none`.
    public var m: Int
    /// Milliseconds after a group's first original before a partial group is closed.
    public var flushTimeoutMs: Double

    /// Reed-Solomon unless said otherwise.
    public var code: Code

    public init(name: String, k: Int, m: Int, flushTimeoutMs: Double, code: Code = .reedSolomon) {
        self.name = name
        self.k = k
        self.m = m
        self.flushTimeoutMs = flushTimeoutMs
        self.code = code
    }

    public var isEnabled: Bool { k > 0 && m > 0 }
    public var description: String { isEnabled ? "\(name) (\(k)+\(m), flush \(flushTimeoutMs) ms)" : name }

    /// Repair symbols for a group closed with `originals` packets: the full group's ratio, rounded up,
    /// so a partial group is protected as well as a full one (UDPspeeder interpolates the same way).
    public func repairCount(originals: Int) -> Int {
        guard isEnabled, originals > 0 else { return 0 }
        if originals >= k { return m }
        return (originals * m + k - 1) / k
    }

    /// The flush timeout used for custom `k:m` levels when `--flush-timeout` is not given.
    public static let defaultCustomFlushTimeoutMs = 20.0

    public static let none = FECLevel(name: "none", k: 0, m: 0, flushTimeoutMs: 0)
    public static let conservative = preset("conservative", k: 8, overheadPercent: 15, flushTimeoutMs: 25)
    public static let balanced = preset("balanced", k: 12, overheadPercent: 25, flushTimeoutMs: 20)
    public static let aggressive = preset("aggressive", k: 16, overheadPercent: 40, flushTimeoutMs: 15)
    public static let presets: [FECLevel] = [.none, .conservative, .balanced, .aggressive]

    /// m = ceil(k x overhead), in integers so 12 x 25 % is exactly 3.
    static func preset(_ name: String, k: Int, overheadPercent: Int, flushTimeoutMs: Double) -> FECLevel {
        FECLevel(name: name, k: k, m: (k * overheadPercent + 99) / 100, flushTimeoutMs: flushTimeoutMs)
    }

    /// Parses a preset name or `k:m`. `flushTimeoutMs`, when given, replaces the level's own timeout.
    public static func parse(_ text: String, flushTimeoutMs: Double? = nil) throws(FECError) -> FECLevel {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        if var level = presets.first(where: { $0.name == trimmed }) {
            if let flushTimeoutMs, level.isEnabled { level.flushTimeoutMs = flushTimeoutMs }
            return level
        }
        var parts = trimmed.split(separator: ":", omittingEmptySubsequences: false)
        var code = Code.reedSolomon
        if parts.count == 3, parts[0] == "rq" || parts[0] == "raptorq" {
            code = .raptorQModel
            parts.removeFirst()
        }
        guard parts.count == 2, let k = Int(parts[0]), let m = Int(parts[1]) else {
            throw FECError(.badLevel, "unknown FEC level \"\(text)\" (none, conservative, balanced, aggressive, k:m such as 10:3, or rq:k:m for the RaptorQ model)")
        }
        guard (1...ReedSolomon.maxSourceSymbols).contains(k) else {
            throw FECError(.outOfRange, "FEC level \(text): k must be 1...\(ReedSolomon.maxSourceSymbols)")
        }
        guard (1...ReedSolomon.maxRepairSymbols).contains(m) else {
            throw FECError(.outOfRange, "FEC level \(text): m must be 1...\(ReedSolomon.maxRepairSymbols)")
        }
        return FECLevel(name: (code == .raptorQModel ? "rq:" : "") + "\(k):\(m)", k: k, m: m,
                        flushTimeoutMs: flushTimeoutMs ?? defaultCustomFlushTimeoutMs, code: code)
    }

    /// Parses a comma-separated list, e.g. `none,balanced,10:3`.
    public static func parseList(_ text: String, flushTimeoutMs: Double? = nil) throws(FECError) -> [FECLevel] {
        let items = text.split(separator: ",").map(String.init)
        guard !items.isEmpty else { throw FECError(.badLevel, "no FEC level given") }
        var levels: [FECLevel] = []
        for item in items {
            let level = try parse(item, flushTimeoutMs: flushTimeoutMs)
            if !levels.contains(where: { $0.name == level.name }) { levels.append(level) }
        }
        return levels
    }
}
