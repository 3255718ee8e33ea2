/// Why an FEC setting or operation was refused: what was wrong, in one line a person can act on.
public struct FECError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// k, m or the symbol size is outside what the code supports.
        case outOfRange
        /// A level name or `k:m` text that does not parse.
        case badLevel
        /// More symbols lost than the group has repair symbols: no MDS code can rebuild it.
        case tooManyLost
        /// An erasure index outside 0..<k+m, or listed twice.
        case badErasure
        /// ISA-L found the surviving rows singular (cannot happen with a Cauchy matrix; checked anyway).
        case singular
    }

    public let code: Code
    public let reason: String

    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { reason }

    /// Equal by code, so a test can name the error it expects.
    public static func == (lhs: FECError, rhs: FECError) -> Bool { lhs.code == rhs.code }
}
