public import Base
public import DNSWire

/// What a probe asks the responder to do (the low four bits of the meta block's first byte).
public enum ProbeKind: UInt8, Sendable, CaseIterable, Codable {
    /// The smallest authenticated probe: "does the answer come from my responder?"
    case echo = 1
    /// N characters in the QNAME; the reply says how many arrived and digests them.
    case upload = 2
    /// Asks for exactly N payload bytes in a chosen record type.
    case download = 3
    /// Reserved for sequenced path probes (sequence number and send time in `parameters`).
    case path = 4
    /// Reserved for leak-zone probes (the responder logs the asking resolver).
    case leak = 5
}

/// The authenticated block every probe name starts with (docs/PROTOCOL.md, "Meta block").
///
/// 30 bytes, carried as the first 48 base32 characters of the payload labels whatever encoding the
/// rest of the name uses: base32 letters are valid in every label alphabet, and base32 survives
/// resolvers that randomise letter case (DNS 0x20), so the responder can always read it.
public struct ProbeMeta: Hashable, Sendable {
    public static let version: UInt8 = 1
    public static let byteCount = 30
    public static let characterCount = 48
    public static let nonceLength = 8
    public static let tagLength = 8
    public static let parameterLength = 10

    public var kind: ProbeKind
    /// Encoding of the filler characters that follow the meta block.
    public var encoding: LabelEncoding
    public var nonce: [UInt8]
    /// Total payload characters in front of the zone, meta block included: lets the responder see truncation.
    public var totalCharacters: Int
    /// Kind-specific: for `download`, bytes 0-1 the requested payload size and 2-3 the record type.
    public var parameters: [UInt8]

    /// No parameters: one shared array rather than a new one per probe.
    public static let noParameters = [UInt8](repeating: 0, count: parameterLength)

    public init(kind: ProbeKind, encoding: LabelEncoding = .base32, nonce: [UInt8], totalCharacters: Int,
                parameters: [UInt8] = ProbeMeta.noParameters) {
        precondition(nonce.count == Self.nonceLength && parameters.count == Self.parameterLength)
        self.kind = kind
        self.encoding = encoding
        self.nonce = nonce
        self.totalCharacters = totalCharacters
        self.parameters = parameters
    }

    /// How a download probe asks the responder to treat the EDNS size the resolver advertised
    /// upstream (parameter byte 4; docs/PROTOCOL.md).
    public enum EDNSRequest: UInt8, Sendable, CaseIterable {
        /// As the responder is set (`serve --edns`).
        case server = 0
        /// Truncate a UDP answer larger than the advertised size (TC), as authoritative servers do.
        case honor = 1
        /// Answer whole whatever the advertised size, as MasterDnsVPN's server does.
        case ignore = 2
    }

    public static func download(nonce: [UInt8], bytes: Int, type: DNSType, encoding: LabelEncoding = .base32,
                                totalCharacters: Int = characterCount, edns: EDNSRequest = .server) -> ProbeMeta {
        var p = [UInt8](repeating: 0, count: parameterLength)
        p[4] = edns.rawValue
        p[0] = UInt8(truncatingIfNeeded: bytes >> 8)
        p[1] = UInt8(truncatingIfNeeded: bytes)
        p[2] = UInt8(truncatingIfNeeded: type.rawValue >> 8)
        p[3] = UInt8(truncatingIfNeeded: type.rawValue)
        return ProbeMeta(kind: .download, encoding: encoding, nonce: nonce, totalCharacters: totalCharacters, parameters: p)
    }

    /// For `download`: the payload size asked for.
    public var requestedBytes: Int { Int(parameters[0]) << 8 | Int(parameters[1]) }
    /// For `download`: the record type asked for.
    public var requestedType: DNSType { DNSType(rawValue: UInt16(parameters[2]) << 8 | UInt16(parameters[3])) }
    /// For `download`: how the answer should meet the advertised EDNS size (an unknown value: as the server is set).
    public var requestedEDNS: EDNSRequest { EDNSRequest(rawValue: parameters[4]) ?? .server }

    static func encodingCode(_ e: LabelEncoding) -> UInt8 {
        switch e {
        case .base32: 0
        case .base36: 1
        case .base64url: 2
        case .base128: 3
        }
    }

    static func encoding(code: UInt8) -> LabelEncoding? {
        switch code {
        case 0: .base32
        case 1: .base36
        case 2: .base64url
        case 3: .base128
        default: nil
        }
    }

    /// The 22 authenticated bytes in front of the tag.
    var body: [UInt8] {
        var b: [UInt8] = [Self.version << 4 | kind.rawValue, Self.encodingCode(encoding)]
        b.reserveCapacity(Self.byteCount)
        b += nonce
        b.append(UInt8(truncatingIfNeeded: totalCharacters >> 8))
        b.append(UInt8(truncatingIfNeeded: totalCharacters))
        b += parameters
        return b
    }

    /// The zone is bound into the tag so a probe cannot be replayed under another zone.
    static func tag(body: [UInt8], zone: DNSName, key: ProbeKey) -> [UInt8] {
        Keystream.tag(key: key, zone.lowercased().presentationBytes, body)
    }

    /// The 48 lowercase base32 characters of the sealed meta block: `body` and its tag (`tag`),
    /// built on the stack, one array per probe (the characters).
    public func sealed(zone: DNSName, key: ProbeKey) -> [UInt8] {
        let sealer = MetaSealer(zone: zone, key: key)
        return [UInt8](unsafeUninitializedCapacity: Self.characterCount) { characters, initialized in
            withUnsafeTemporaryAllocation(byteCount: Self.byteCount, alignment: 8) { block in
                block[0] = Self.version << 4 | kind.rawValue
                block[1] = Self.encodingCode(encoding)
                for (index, byte) in nonce.prefix(Self.nonceLength).enumerated() { block[2 + index] = byte }
                block[10] = UInt8(truncatingIfNeeded: totalCharacters >> 8)
                block[11] = UInt8(truncatingIfNeeded: totalCharacters)
                for (index, byte) in parameters.prefix(Self.parameterLength).enumerated() { block[12 + index] = byte }
                initialized = sealer.seal(block, into: UnsafeMutableRawPointer(characters.baseAddress!))
            }
        }
    }

    /// Reads and authenticates the meta block at the start of `characters`.
    public static func open(_ characters: ArraySlice<UInt8>, zone: DNSName, key: ProbeKey) throws(ProbeError) -> ProbeMeta {
        try openSealed(characters, zone: zone, key: key).meta
    }

    /// As `open`, also returning the 30 sealed bytes (their base32 is the canonical meta characters).
    static func openSealed(_ characters: ArraySlice<UInt8>, zone: DNSName,
                           key: ProbeKey) throws(ProbeError) -> (meta: ProbeMeta, sealed: [UInt8]) {
        guard characters.count >= characterCount else { throw ProbeError(.notAProbe, "payload shorter than the meta block") }
        let bytes: [UInt8]
        do {
            bytes = try LabelEncoding.base32.decode(Array(characters.prefix(characterCount)))
        } catch {
            throw ProbeError(.notAProbe, "meta block is not base32")
        }
        guard bytes.count == byteCount else { throw ProbeError(.notAProbe, "meta block has \(bytes.count) bytes") }
        guard bytes[0] >> 4 == version else { throw ProbeError(.unsupportedVersion, "probe version \(bytes[0] >> 4)") }
        guard MetaSealer(zone: zone, key: key).verifies(bytes) else {
            throw ProbeError(.badTag, "meta block tag does not verify")
        }
        guard let kind = ProbeKind(rawValue: bytes[0] & 0x0F) else { throw ProbeError(.unknownKind, "probe kind \(bytes[0] & 0x0F)") }
        guard let encoding = encoding(code: bytes[1] & 0x03), bytes[1] & 0xFC == 0 else {
            throw ProbeError(.notAProbe, "unknown flags \(bytes[1])")
        }
        let meta = ProbeMeta(kind: kind, encoding: encoding, nonce: Array(bytes[2..<10]),
                             totalCharacters: Int(bytes[10]) << 8 | Int(bytes[11]), parameters: Array(bytes[12..<22]))
        return (meta, bytes)
    }
}

/// Seals meta blocks under one zone and key: the key's HMAC with the zone already absorbed, so a
/// block costs its 22 bytes of hashing and two SHA-256 compressions (the inner and outer
/// finalisations), written straight where the characters go. The sweep seals one per probe with
/// it; `ProbeMeta.sealed` makes one per call.
public struct MetaSealer: Sendable {
    private let keyed: KeyedHMAC

    public init(zone: DNSName, key: ProbeKey) {
        var hmac = key.keyedHMAC
        zone.withLowercasedPresentationBytes { hmac.update($0) }
        keyed = hmac
    }

    /// Writes the tag of the 22-byte body at the start of `block` (30 bytes) into its last 8
    /// bytes, then the 48 base32 characters of the whole block at `characters`; returns 48.
    func seal(_ block: UnsafeMutableRawBufferPointer, into characters: UnsafeMutableRawPointer) -> Int {
        let bodyLength = ProbeMeta.byteCount - ProbeMeta.tagLength
        var hmac = keyed
        hmac.update(UnsafeRawBufferPointer(rebasing: block[0..<bodyLength]))
        hmac.finalize { mac in
            for index in 0..<ProbeMeta.tagLength { block[bodyLength + index] = mac[index] }
        }
        return LabelEncoding.base32(UnsafeRawBufferPointer(block), into: characters)
    }

    /// Whether the last 8 of the 30 bytes of `block` are the tag of the 22 before them (compared
    /// in constant time, in place).
    func verifies(_ block: [UInt8]) -> Bool {
        guard block.count == ProbeMeta.byteCount else { return false }
        let bodyLength = ProbeMeta.byteCount - ProbeMeta.tagLength
        var hmac = keyed
        return block.withUnsafeBytes { raw in
            hmac.update(UnsafeRawBufferPointer(rebasing: raw[0..<bodyLength]))
            return hmac.finalize { mac in
                var diff: UInt8 = 0
                for index in 0..<ProbeMeta.tagLength { diff |= mac[index] ^ raw[bodyLength + index] }
                return diff == 0
            }
        }
    }

    /// Writes the 48 characters of an echo probe's sealed meta block (no parameters) for the
    /// 8-byte `nonce` (big-endian) at `characters`: the sweep's send path, with no array per probe.
    public func writeEcho(nonce: UInt64, encoding: LabelEncoding, totalCharacters: Int, into characters: UnsafeMutableRawPointer) {
        withUnsafeTemporaryAllocation(byteCount: ProbeMeta.byteCount, alignment: 8) { block in
            _ = block.initializeMemory(as: UInt8.self, repeating: 0)
            block[0] = ProbeMeta.version << 4 | ProbeKind.echo.rawValue
            block[1] = ProbeMeta.encodingCode(encoding)
            block.storeBytes(of: nonce.bigEndian, toByteOffset: 2, as: UInt64.self)
            block[10] = UInt8(truncatingIfNeeded: totalCharacters >> 8)
            block[11] = UInt8(truncatingIfNeeded: totalCharacters)
            _ = seal(block, into: characters)
        }
    }
}

/// Why a name or a reply is not a valid probe (or a probe setting is out of range), in one line.
public typealias ProbeError = CodedError<ProbeErrorCode>

/// The causes of a `ProbeError`.
public enum ProbeErrorCode: String, Sendable, Hashable {
    case notAProbe, unsupportedVersion, badTag, unknownKind, outOfRange, unsupportedType, malformedReply
}
