/// The FEC levels the iOS client offers instead of raw group sizes, and the engine fields each
/// one stands for (the VpnDad client's `fecSettings(forLevel:)` table).
public struct FECPreset: Sendable, Hashable, Codable {
    public var level: String
    public var enabled: Bool
    /// Data packets per FEC group.
    public var groupSize: Int
    /// Repair symbols as a percentage of the group.
    public var overheadPercent: Int
    public var symbolSize: Int
    public var flushTimeoutMs: Int

    public init(level: String, enabled: Bool, groupSize: Int, overheadPercent: Int, symbolSize: Int, flushTimeoutMs: Int) {
        self.level = level
        self.enabled = enabled
        self.groupSize = groupSize
        self.overheadPercent = overheadPercent
        self.symbolSize = symbolSize
        self.flushTimeoutMs = flushTimeoutMs
    }

    public static let presets: [FECPreset] = [
        FECPreset(level: "none", enabled: false, groupSize: 8, overheadPercent: 15, symbolSize: 0, flushTimeoutMs: 25),
        FECPreset(level: "conservative", enabled: true, groupSize: 8, overheadPercent: 15, symbolSize: 0, flushTimeoutMs: 25),
        FECPreset(level: "balanced", enabled: true, groupSize: 12, overheadPercent: 25, symbolSize: 0, flushTimeoutMs: 20),
        FECPreset(level: "aggressive", enabled: true, groupSize: 16, overheadPercent: 40, symbolSize: 0, flushTimeoutMs: 15),
    ]

    /// Case and surrounding blanks do not matter; `off` and `disabled` mean `none`. `nil` for
    /// anything else.
    public static func normalized(_ level: String) -> FECPreset? {
        var key = level.lowercased()
        key = String(key.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
        if key == "off" || key == "disabled" { key = "none" }
        return presets.first { $0.level == key }
    }
}
