public import Base

/// Why an FEC setting or operation was refused: what was wrong, in one line a person can act on.
public typealias FECError = CodedError<FECErrorCode>

/// The causes of an `FECError`.
public enum FECErrorCode: String, Sendable, Hashable {
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
