/// One direction's figure for one engine through one pair, in that engine's own units.
public struct DirectionFigure: Sendable, Hashable, Codable {
    /// The number the user types (or, when `userSettable` is false, the size the engine derives by
    /// itself); nil when the pair cannot carry the engine in this direction.
    public var value: Int?
    /// What bound `value` (or, when it is nil, why there is none).
    public var boundBy: BindingLimit
    /// The record type the figure rests on (download), nil for upload.
    public var recordType: RecordType?
    /// What the engine's own search would settle on through this pair, when that differs from
    /// `value` because the search steps coarser than one byte (iodine's fragment-size autoprobe).
    public var engineSearchValue: Int?
    /// Tunnel payload bytes one query or response carries at `value` (equal to `value` where the
    /// engine's unit already is payload bytes).
    public var payloadBytes: Int?
    /// Where the user types it: a config key or flag, e.g. `MAX_UPLOAD_MTU` or `-m`.
    public var setting: String
    /// False when the engine computes this size by itself and offers no setting for it.
    public var userSettable: Bool

    /// The pair can carry the engine in this direction.
    public var usable: Bool { value != nil }

    /// Tunnel payload bytes one query or response carries: `payloadBytes`, or `value` where the
    /// model gives no separate payload figure. What goodput is counted in (`rank`, `monitor`).
    public var bytesPerQuery: Int? { payloadBytes ?? value }

    public init(value: Int?, boundBy: BindingLimit, recordType: RecordType? = nil, engineSearchValue: Int? = nil,
                payloadBytes: Int? = nil, setting: String, userSettable: Bool = true) {
        self.value = value
        self.boundBy = boundBy
        self.recordType = recordType
        self.engineSearchValue = engineSearchValue
        self.payloadBytes = payloadBytes
        self.setting = setting
        self.userSettable = userSettable
    }
}
