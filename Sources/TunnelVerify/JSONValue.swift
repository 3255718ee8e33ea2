import Base
import Foundation

/// Any JSON document, decoded without a schema so that the profile parser can say which field is
/// wrong and why (a `Decodable` struct would only say "data corrupted").
enum JSONValue: Sendable, Hashable, Decodable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    static func parse(_ bytes: [UInt8]) throws(ProfileError) -> JSONValue {
        do {
            try JSONLimits.profile.check(bytes)
        } catch {
            throw ProfileError(field: "(document)", "refused: \(error)")
        }
        do {
            return try JSONDecoder().decode(JSONValue.self, from: Data(bytes))
        } catch let DecodingError.dataCorrupted(context) {
            let detail = (context.underlyingError as NSError?)?.userInfo[NSDebugDescriptionErrorKey] as? String
            throw ProfileError(field: "(document)", "not valid JSON: \(detail ?? context.debugDescription)")
        } catch {
            throw ProfileError(field: "(document)", "not valid JSON: \(error)")
        }
    }

    var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// Typed access to one object of the document, every failure naming the field's path.
struct JSONObject {
    let path: String
    let fields: [String: JSONValue]

    init(_ value: JSONValue, path: String) throws(ProfileError) {
        guard case .object(let fields) = value else {
            throw ProfileError(field: path.isEmpty ? "(document)" : path, "must be an object, found \(value.typeName)")
        }
        self.path = path
        self.fields = fields
    }

    func name(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    func value(_ key: String) -> JSONValue? {
        guard let value = fields[key], value != .null else { return nil }
        return value
    }

    func string(_ key: String) throws(ProfileError) -> String? {
        guard let value = value(key) else { return nil }
        guard case .string(let text) = value else { throw ProfileError(field: name(key), "must be a string, found \(value.typeName)") }
        return text
    }

    func requiredString(_ key: String) throws(ProfileError) -> String {
        guard let text = try string(key) else { throw ProfileError(field: name(key), "is missing") }
        guard !text.trimmingCharacters(in: .whitespaces).isEmpty else { throw ProfileError(field: name(key), "is empty") }
        return text
    }

    func integer(_ key: String) throws(ProfileError) -> Int? {
        guard let value = value(key) else { return nil }
        guard case .number(let number) = value, let integer = Int(exactly: number) else {
            throw ProfileError(field: name(key), "must be an integer, found \(value.typeName)")
        }
        return integer
    }

    func bool(_ key: String) throws(ProfileError) -> Bool? {
        guard let value = value(key) else { return nil }
        guard case .bool(let flag) = value else { throw ProfileError(field: name(key), "must be true or false, found \(value.typeName)") }
        return flag
    }

    func array(_ key: String) throws(ProfileError) -> [JSONValue]? {
        guard let value = value(key) else { return nil }
        guard case .array(let items) = value else { throw ProfileError(field: name(key), "must be an array, found \(value.typeName)") }
        return items
    }

    func strings(_ key: String) throws(ProfileError) -> [String]? {
        guard let items = try array(key) else { return nil }
        var result: [String] = []
        for (index, item) in items.enumerated() {
            guard case .string(let text) = item else {
                throw ProfileError(field: "\(name(key))[\(index)]", "must be a string, found \(item.typeName)")
            }
            result.append(text)
        }
        return result
    }

    func object(_ key: String) throws(ProfileError) -> JSONObject? {
        guard let value = value(key) else { return nil }
        return try JSONObject(value, path: name(key))
    }
}
