import Foundation

/// One FEC setting: k source packets per group, m repair symbols, and the flush timeout after which
/// a partial group is closed and gets its repair anyway.
///
/// The four presets are the iOS client's profile contract (`fecSettings(forLevel:)`): m is
/// ceil(k x overhead). A custom level is written `k:m` in UDPspeeder's `-f x:y` convention
/// (y repair per x originals).
public struct FECLevel: Sendable, Hashable, CustomStringConvertible {
    /// `none`, `conservative`, `balanced`, `aggressive`, or `k:m` for a custom level.
    public var name: String
    /// Source packets per group; 0 for `none`.
    public var k: Int
    /// Repair symbols per full group; 0 for `none`.
    public var m: Int
    /// Milliseconds after a group's first original before a partial group is closed.
    public var flushTimeoutMs: Double

    public init(name: String, k: Int, m: Int, flushTimeoutMs: Double) {
        self.name = name
        self.k = k
        self.m = m
        self.flushTimeoutMs = flushTimeoutMs
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
        let parts = trimmed.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let k = Int(parts[0]), let m = Int(parts[1]) else {
            throw FECError(.badLevel, "unknown FEC level \"\(text)\" (none, conservative, balanced, aggressive, or k:m such as 10:3)")
        }
        guard (1...ReedSolomon.maxSourceSymbols).contains(k) else {
            throw FECError(.outOfRange, "FEC level \(text): k must be 1...\(ReedSolomon.maxSourceSymbols)")
        }
        guard (1...ReedSolomon.maxRepairSymbols).contains(m) else {
            throw FECError(.outOfRange, "FEC level \(text): m must be 1...\(ReedSolomon.maxRepairSymbols)")
        }
        return FECLevel(name: "\(k):\(m)", k: k, m: m, flushTimeoutMs: flushTimeoutMs ?? defaultCustomFlushTimeoutMs)
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
