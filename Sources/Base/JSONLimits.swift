/// Bounds checked on untrusted JSON before a decoder sees it. Foundation's decoder builds the whole
/// tree first and recurses once per nesting level: a 1 MB profile of nested arrays took 10-52 s to
/// reject and a 7 MB report 1.3 GB of memory. One linear pass over the bytes refuses such input first.
public struct JSONLimits: Sendable, Hashable {
    /// The largest document accepted, in bytes.
    public var maxBytes: Int
    /// The deepest nesting of arrays and objects accepted (the top-level value is depth 1).
    public var maxDepth: Int

    public init(maxBytes: Int, maxDepth: Int) {
        self.maxBytes = maxBytes
        self.maxDepth = maxDepth
    }

    /// An engine profile: a few hundred bytes in practice.
    public static let profile = JSONLimits(maxBytes: 1 << 20, maxDepth: 16)
    /// A report document of any kind (a 1,000-resolver scan is about 1 MB).
    public static let report = JSONLimits(maxBytes: 32 << 20, maxDepth: 32)
    /// A fates file: two flat arrays of per-packet fates, long for a long capture.
    public static let fates = JSONLimits(maxBytes: 256 << 20, maxDepth: 16)

    /// Why a document was refused, with the byte offset where the limit was passed.
    public struct Violation: Error, Sendable, Hashable, CustomStringConvertible {
        public enum Kind: String, Sendable, Hashable {
            case tooLarge
            case tooDeep
        }

        public let kind: Kind
        public let offset: Int
        public let limit: Int

        public init(kind: Kind, offset: Int, limit: Int) {
            self.kind = kind
            self.offset = offset
            self.limit = limit
        }

        public var description: String {
            switch kind {
            case .tooLarge: "larger than \(limit) bytes"
            case .tooDeep: "nested deeper than \(limit) levels (at byte \(offset))"
            }
        }
    }

    /// Checks the size, then the nesting depth, with brackets inside strings (and escaped quotes)
    /// left out. It does not validate the JSON: the decoder still does that.
    public func check(_ bytes: some Collection<UInt8>) throws(Violation) {
        let count = bytes.count
        guard count <= maxBytes else { throw Violation(kind: .tooLarge, offset: maxBytes, limit: maxBytes) }
        var depth = 0
        var inString = false
        var escaped = false
        var offset = 0
        for byte in bytes {
            defer { offset += 1 }
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                if depth > maxDepth { throw Violation(kind: .tooDeep, offset: offset, limit: maxDepth) }
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth = max(0, depth - 1)
            default: break
            }
        }
    }
}
