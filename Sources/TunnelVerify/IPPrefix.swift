/// An IPv4 or IPv6 prefix `address/length` (RFC 4632 3.1, RFC 4291 2.3) with its host bits zero,
/// as the kernel takes it in a route. Built only through `init(parsing:)`, which says what is wrong.
public struct IPPrefix: Sendable, Hashable, CustomStringConvertible {
    /// 4 or 6.
    public let family: Int
    /// The network address, 4 or 16 bytes, host bits zero.
    public let network: [UInt8]
    public let length: Int

    public enum Problem: Error, Sendable, Hashable, CustomStringConvertible {
        case notAPrefix
        case lengthOutOfRange(Int)
        case hostBitsSet(suggestion: String)
        public var description: String {
            switch self {
            case .notAPrefix: "is not an IPv4 prefix a.b.c.d/len, an IPv6 prefix x::/len or a domain name"
            case .lengthOutOfRange(let maximum): "has a prefix length outside 0...\(maximum)"
            case .hostBitsSet(let suggestion): "has host bits set (the network is \(suggestion))"
            }
        }
    }

    /// `a.b.c.d/len` (len 0...32) or `x:y::/len` (len 0...128).
    public init(parsing text: String) throws(Problem) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[1].isEmpty, parts[1].utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), parts[1].utf8.count <= 3,
              let length = Int(parts[1]) else { throw .notAPrefix }
        let bytes: [UInt8]
        if let v4 = IPAddress.v4Bytes(String(parts[0])) {
            bytes = v4
        } else if let v6 = IPAddress.v6Bytes(String(parts[0])) {
            bytes = v6
        } else {
            throw .notAPrefix
        }
        guard length <= bytes.count * 8 else { throw .lengthOutOfRange(bytes.count * 8) }
        let masked = IPPrefix.mask(bytes, length: length)
        let family = bytes.count == 4 ? 4 : 6
        guard masked == bytes else {
            throw .hostBitsSet(suggestion: IPPrefix.text(masked) + "/\(length)")
        }
        self.family = family
        network = masked
        self.length = length
    }

    /// A host route: /32 or /128 for one address; `nil` when `address` is not an IP literal.
    public init?(host address: String) {
        guard let bytes = IPAddress.v4Bytes(address) ?? IPAddress.v6Bytes(address) else { return nil }
        family = bytes.count == 4 ? 4 : 6
        network = bytes
        length = bytes.count * 8
    }

    static func mask(_ bytes: [UInt8], length: Int) -> [UInt8] {
        bytes.enumerated().map { index, byte in
            let bits = max(0, min(8, length - index * 8))
            return bits == 8 ? byte : byte & UInt8(truncatingIfNeeded: 0xff << (8 - bits))
        }
    }

    static func text(_ bytes: [UInt8]) -> String { bytes.count == 4 ? IPAddress.text(v4: bytes) : IPAddress.text(v6: bytes) }

    public func contains(_ address: String) -> Bool {
        guard let bytes = family == 4 ? IPAddress.v4Bytes(address) : IPAddress.v6Bytes(address) else { return false }
        return IPPrefix.mask(bytes, length: length) == network
    }

    /// The first host: network + 1 (RFC 1812 4.2.3.1 leaves network+0 out), or the address itself for /32 and /128.
    public var firstHost: String {
        guard length < network.count * 8 else { return IPPrefix.text(network) }
        var bytes = network
        var index = bytes.count - 1
        while index >= 0 {
            let (sum, overflow) = bytes[index].addingReportingOverflow(1)
            bytes[index] = sum
            if !overflow { break }
            index -= 1
        }
        return IPPrefix.text(bytes)
    }

    public var description: String { IPPrefix.text(network) + "/\(length)" }
}
