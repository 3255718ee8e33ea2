/// The one error type of this module: parsing untrusted bytes or text, and refusing to serialize
/// values the wire format cannot carry.
///
/// Equality and hashing look at `code` only, so a test can say which error it expects without
/// spelling out the offset and the wording of the reason.
public struct DNSWireError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// The input ended before a field it announced.
        case truncated
        /// A compression pointer does not point strictly backwards, or too many pointers were followed.
        case pointerLoop
        /// A compression pointer points past the end of the message.
        case pointerOutOfBounds
        /// A label length byte with the reserved top bits 01 or 10 (RFC 1035 4.1.4, RFC 6891 5).
        case badLabelType
        /// A label longer than 63 octets (RFC 1035 2.3.4).
        case labelTooLong
        /// A name longer than 255 octets on the wire (RFC 1035 2.3.4).
        case nameTooLong
        /// RDATA shorter or longer than its type needs, or a field that runs past RDLENGTH.
        case rdataLengthMismatch
        /// More than 65535 entries in one section (the count fields are 16 bits).
        case recordCountTooLarge
        /// A character that presentation text may not hold, or a malformed escape.
        case invalidCharacter
        /// An empty label in the middle of a name ("a..b").
        case emptyLabel
        /// Label payload text that is not valid in its encoding.
        case invalidEncoding
        /// A value the format cannot carry, or a structural rule broken (a second OPT record,
        /// an OPT record outside the additional section or with a non-root owner).
        case valueOutOfRange
    }

    public let code: Code
    /// Byte offset in the message (or character offset in text) where it went wrong; -1 when none.
    public let offset: Int
    /// One human line, e.g. "name pointer at offset 34 loops".
    public let reason: String

    public init(_ code: Code, at offset: Int = -1, _ reason: String) {
        self.code = code
        self.offset = offset
        self.reason = reason
    }

    public static func == (lhs: DNSWireError, rhs: DNSWireError) -> Bool {
        lhs.code == rhs.code
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
    }

    public var description: String {
        offset >= 0 ? "\(code.rawValue) at offset \(offset): \(reason)" : "\(code.rawValue): \(reason)"
    }
}
