/// An optional report field that is always written: `null` when absent, so a reader sees that the
/// metric exists and was not measured. Synthesized `Codable` does the rest, so a new field cannot be
/// forgotten by a hand-written encoder. A missing key decodes as nil (older documents still load).
@propertyWrapper
public struct NullCoded<Value: Codable>: Codable {
    public var wrappedValue: Value?

    public init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        wrappedValue = c.decodeNil() ? nil : try c.decode(Value.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        if let wrappedValue { try c.encode(wrappedValue) } else { try c.encodeNil() }
    }
}

extension NullCoded: Sendable where Value: Sendable {}
extension NullCoded: Equatable where Value: Equatable {}
extension NullCoded: Hashable where Value: Hashable {}

extension KeyedDecodingContainer {
    /// Synthesized decoders call this overload for a `@NullCoded` field: an absent key is nil, not an error.
    public func decode<Value>(_ type: NullCoded<Value>.Type, forKey key: Key) throws -> NullCoded<Value> {
        try decodeIfPresent(type, forKey: key) ?? NullCoded(wrappedValue: nil)
    }
}
