/// One {OPTION-CODE, OPTION-LENGTH, OPTION-DATA} triple of OPT RDATA (RFC 6891 6.1.2), kept raw.
public struct EDNSOption: Hashable, Sendable {
    public var code: UInt16
    /// At most 65535 bytes (OPTION-LENGTH is 16 bits); serializing more throws `.valueOutOfRange`.
    public var data: [UInt8]

    public init(code: UInt16, data: [UInt8] = []) {
        self.code = code
        self.data = data
    }
}
