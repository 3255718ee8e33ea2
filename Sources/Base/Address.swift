import CInetAddress

/// Why a text is not an address, an endpoint or a prefix. One error for the three parsers; its
/// description is the reason alone ("not an IP address"), so a caller puts the text and where it
/// came from in front.
public enum AddressError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Not an IPv4 or IPv6 literal (as `inet_pton` takes it).
    case notAnAddress
    /// A control character (or NUL, which would cut the C string `inet_pton` reads).
    case controlCharacter
    /// `[v6` without its closing bracket.
    case missingBracket
    /// The port is not a number (the text after the colon).
    case badPort(String)
    /// The port is outside 1...65535 (or 0...65535 where port 0 is allowed).
    case portOutOfRange(Int)
    /// An address and no port where a port is required.
    case missingPort
    /// Not `address/length`.
    case notAPrefix
    /// The prefix length exceeds the family's bits.
    case lengthOutOfRange(maximum: Int)
    /// The address of a prefix has bits set beyond the length; `suggestion` is the network.
    case hostBitsSet(suggestion: String)

    public var description: String {
        switch self {
        case .notAnAddress: "not an IP address"
        case .controlCharacter: "control character in the entry"
        case .missingBracket: "missing ']'"
        case .badPort(let text): "bad port '\(text)'"
        case .portOutOfRange(let port): "port \(port) out of range 1-65535"
        case .missingPort: "no port (write ip:port or [v6]:port)"
        case .notAPrefix: "is not an IPv4 prefix a.b.c.d/len, an IPv6 prefix x::/len or a domain name"
        case .lengthOutOfRange(let maximum): "has a prefix length outside 0...\(maximum)"
        case .hostBitsSet(let suggestion): "has host bits set (the network is \(suggestion))"
        }
    }
}

/// An IPv4 or IPv6 address, compact enough to key tables by (a capture's hot path does).
/// Text is read by `inet_pton`, so what is accepted is exactly what the kernel takes, and written in
/// the canonical form (RFC 5952 for IPv6).
public enum IPAddress: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Network byte order folded into a host integer (192.0.2.1 is 0xC000_0201).
    case v4(UInt32)
    /// The 128 bits as two big-endian halves.
    case v6(UInt64, UInt64)

    /// Parses an IPv4 dotted quad or IPv6 text (without zone); nil when it is neither.
    public init?(_ text: some StringProtocol) {
        guard let address = try? IPAddress(parsing: String(text)) else { return nil }
        self = address
    }

    /// Parses an IPv4 dotted quad or IPv6 text (without zone).
    public init(parsing text: String) throws(AddressError) {
        guard text.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else { throw .controlCharacter }
        var raw = [UInt8](repeating: 0, count: text.contains(":") ? 16 : 4)
        let parsed = raw.count == 16 ? tunnelprobe_parse_ipv6(text, &raw) : tunnelprobe_parse_ipv4(text, &raw)
        guard parsed == 1, let address = IPAddress(bytes: raw) else { throw .notAnAddress }
        self = address
    }

    /// From network-order bytes: 4 for IPv4, 16 for IPv6; nil for any other count.
    public init?(bytes: some Collection<UInt8>) {
        switch bytes.count {
        case 4:
            self = .v4(bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        case 16:
            var hi: UInt64 = 0, lo: UInt64 = 0
            for (index, byte) in bytes.enumerated() {
                if index < 8 { hi = hi << 8 | UInt64(byte) } else { lo = lo << 8 | UInt64(byte) }
            }
            self = .v6(hi, lo)
        default:
            return nil
        }
    }

    public var version: Int {
        switch self {
        case .v4: 4
        case .v6: 6
        }
    }

    public var isIPv6: Bool { version == 6 }

    /// Network-order bytes: 4 or 16.
    public var bytes: [UInt8] {
        switch self {
        case .v4(let a):
            return (0..<4).map { UInt8(truncatingIfNeeded: a >> (24 - 8 * UInt32($0))) }
        case .v6(let hi, let lo):
            return (0..<16).map { i in UInt8(truncatingIfNeeded: (i < 8 ? hi : lo) >> (56 - 8 * UInt64(i % 8))) }
        }
    }

    /// Dotted quad for IPv4; RFC 5952 canonical text for IPv6 (lower case, longest zero run as `::`).
    public var description: String {
        switch self {
        case .v4(let a):
            return "\(a >> 24).\((a >> 16) & 0xff).\((a >> 8) & 0xff).\(a & 0xff)"
        case .v6(let hi, let lo):
            let groups: [UInt16] = (0..<8).map { i in
                let half = i < 4 ? hi : lo
                return UInt16(truncatingIfNeeded: half >> (UInt64(3 - i % 4) * 16))
            }
            // RFC 5952 section 4.2: compress the longest run of two or more zero groups, the first on ties.
            var bestStart = -1, bestLength = 1, runStart = -1
            for i in 0...8 {
                if i < 8, groups[i] == 0 {
                    if runStart < 0 { runStart = i }
                } else if runStart >= 0 {
                    if i - runStart > bestLength { bestStart = runStart; bestLength = i - runStart }
                    runStart = -1
                }
            }
            func hex(_ range: Range<Int>) -> String {
                groups[range].map { String($0, radix: 16) }.joined(separator: ":")
            }
            if bestStart < 0 { return hex(0..<8) }
            return hex(0..<bestStart) + "::" + hex((bestStart + bestLength)..<8)
        }
    }
}

/// An IP address and a port: a resolver, a listen address, a tunnel server, a SOCKS proxy.
/// Written `ip:port` or `[v6]:port`; in JSON `{"host": "<address>", "port": N}`.
public struct Endpoint: Sendable, Hashable, Comparable, CustomStringConvertible, Codable {
    public var address: IPAddress
    public var port: UInt16

    public init(address: IPAddress, port: UInt16) {
        self.address = address
        self.port = port
    }

    /// `ip`, `ip:port`, `[v6]`, `[v6]:port` or a bare IPv6 address. Without a port the endpoint takes
    /// `defaultPort`; when that is nil a port is required. Port 0 only with `allowZeroPort` (a listen
    /// address that lets the kernel choose).
    public init(parsing text: String, defaultPort: UInt16?, allowZeroPort: Bool = false) throws(AddressError) {
        let (host, port) = try Endpoint.split(text, defaultPort: defaultPort, allowZeroPort: allowZeroPort)
        self.init(address: try IPAddress(parsing: host), port: port)
    }

    /// The host part and the port of `ip`, `ip:port`, `[host]`, `[host]:port` or a bare IPv6 text,
    /// without reading the host (a resolver list's CIDR block `a.b.c.0/24:53` splits the same way).
    public static func split(_ text: String, defaultPort: UInt16?, allowZeroPort: Bool = false) throws(AddressError) -> (host: String, port: UInt16) {
        guard text.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else { throw .controlCharacter }
        var host = Substring(text)
        var portText: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw .missingBracket }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { throw .badPort(String(rest)) }
                portText = rest.dropFirst()
            }
        } else if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        let port: Int
        if let portText {
            guard !portText.isEmpty, portText.count <= 6, portText.allSatisfy(\.isASCII), let value = Int(portText) else {
                throw .badPort(String(portText))
            }
            port = value
        } else {
            guard let defaultPort else { throw .missingPort }
            port = Int(defaultPort)
        }
        guard (allowZeroPort ? 0 : 1)...65535 ~= port else { throw .portOutOfRange(port) }
        return (String(host), UInt16(port))
    }

    /// The address alone, in its canonical text.
    public var host: String { address.description }
    public var isIPv6: Bool { address.isIPv6 }

    public var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    public static func < (a: Endpoint, b: Endpoint) -> Bool { (a.address, a.port) < (b.address, b.port) }

    private enum CodingKeys: String, CodingKey { case host, port }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let host = try container.decode(String.self, forKey: .host)
        guard let address = IPAddress(host) else {
            throw DecodingError.dataCorruptedError(forKey: .host, in: container, debugDescription: "\"\(host)\" is not an IP address")
        }
        self.init(address: address, port: try container.decode(UInt16.self, forKey: .port))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(host, forKey: .host)
        try container.encode(port, forKey: .port)
    }
}

/// An IPv4 or IPv6 prefix `address/length` (RFC 4632 3.1, RFC 4291 2.3) with its host bits zero,
/// as the kernel takes it in a route. Built only through `init(parsing:)`, which says what is wrong,
/// or from one address (`init(host:)`).
public struct IPPrefix: Sendable, Hashable, CustomStringConvertible {
    /// The network address, host bits zero.
    public let network: IPAddress
    public let length: Int

    /// 4 or 6.
    public var family: Int { network.version }

    /// `a.b.c.d/len` (len 0...32) or `x:y::/len` (len 0...128).
    public init(parsing text: String) throws(AddressError) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[1].isEmpty, parts[1].utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), parts[1].utf8.count <= 3,
              let length = Int(parts[1]), let address = IPAddress(parts[0]) else { throw .notAPrefix }
        let bits = address.bytes.count * 8
        guard length <= bits else { throw .lengthOutOfRange(maximum: bits) }
        let masked = IPPrefix.masked(address, length: length)
        guard masked == address else { throw .hostBitsSet(suggestion: "\(masked)/\(length)") }
        network = masked
        self.length = length
    }

    /// A host route: /32 or /128 for one address.
    public init(host address: IPAddress) {
        network = address
        length = address.bytes.count * 8
    }

    /// A host route for the address written `text`; nil when it is not an address.
    public init?(host text: String) {
        guard let address = IPAddress(text) else { return nil }
        self.init(host: address)
    }

    /// `address` with every bit past `length` cleared.
    public static func masked(_ address: IPAddress, length: Int) -> IPAddress {
        let bytes = address.bytes.enumerated().map { index, byte in
            let bits = max(0, min(8, length - index * 8))
            return bits == 8 ? byte : byte & UInt8(truncatingIfNeeded: 0xff << (8 - bits))
        }
        return IPAddress(bytes: bytes) ?? address
    }

    public func contains(_ address: IPAddress) -> Bool {
        address.version == family && IPPrefix.masked(address, length: length) == network
    }

    /// Whether the address written `text` is inside; false when `text` is not an address.
    public func contains(_ text: String) -> Bool { IPAddress(text).map(contains) ?? false }

    /// The first host: network + 1 (RFC 1812 4.2.3.1 leaves network+0 out), or the address itself for /32 and /128.
    public var firstHost: IPAddress {
        var bytes = network.bytes
        guard length < bytes.count * 8 else { return network }
        var index = bytes.count - 1
        while index >= 0 {
            let (sum, overflow) = bytes[index].addingReportingOverflow(1)
            bytes[index] = sum
            if !overflow { break }
            index -= 1
        }
        return IPAddress(bytes: bytes) ?? network
    }

    public var description: String { "\(network)/\(length)" }
}
