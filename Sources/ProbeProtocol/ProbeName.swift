public import DNSWire

/// Builds and reads probe query names: `<meta block><filler>` split into 63-character labels, then the zone.
///
/// The labels are laid out exactly as a tunnel lays out its encoded payload, so a probe of C payload
/// characters has the same QNAME length and label structure as a tunnel query of C characters.
public enum ProbeName {
    /// The payload characters of a probe: meta block then filler drawn from the encoding's alphabet.
    public static func characters(meta: ProbeMeta, zone: DNSName, key: ProbeKey) -> [UInt8] {
        let sealed = meta.sealed(zone: zone, key: key)
        // An echo probe is its meta block alone.
        guard meta.totalCharacters > ProbeMeta.characterCount else { return sealed }
        return sealed + filler(meta: meta, key: key)
    }

    public static func build(meta: ProbeMeta, zone: DNSName, key: ProbeKey) throws(ProbeError) -> DNSName {
        try buildWithCharacters(meta: meta, zone: zone, key: key).name
    }

    /// As `build`, also returning the payload characters (what the reply's digest must match).
    public static func buildWithCharacters(meta: ProbeMeta, zone: DNSName,
                                           key: ProbeKey) throws(ProbeError) -> (name: DNSName, characters: [UInt8]) {
        guard meta.totalCharacters >= ProbeMeta.characterCount,
              meta.totalCharacters <= QNameCapacity.payloadCharacters(under: zone) else {
            throw ProbeError(.outOfRange, "\(meta.totalCharacters) payload characters do not fit under \(zone)")
        }
        let chars = characters(meta: meta, zone: zone, key: key)
        do {
            // The labels of `QNameCapacity.labels(splitting:)` then the zone's, built flat.
            return (try DNSName(payload: chars, under: zone), chars)
        } catch {
            throw ProbeError(.outOfRange, "probe name does not fit: \(error)")
        }
    }

    /// The filler the responder expects after the meta block: keyed, so it also authenticates content.
    static func filler(meta: ProbeMeta, key: ProbeKey) -> [UInt8] {
        let count = meta.totalCharacters - ProbeMeta.characterCount
        guard count > 0 else { return [] }
        let alphabet = meta.encoding.alphabet
        let random = Keystream.bytes(key: key, purpose: Purpose.uploadFiller, nonce: meta.nonce, count: count)
        return random.map { alphabet[Int($0) % alphabet.count] }
    }

    /// What the responder concluded about the characters that reached it.
    public enum Integrity: UInt8, Sendable, Codable {
        case intact = 0
        /// Same characters, different letter case (DNS 0x20 or a rewriting middlebox).
        case caseChanged = 1
        case rewritten = 2
        /// Fewer or more characters than the meta block says were sent.
        case lengthMismatch = 3
    }

    public struct Received: Sendable {
        public var meta: ProbeMeta
        public var characters: [UInt8]
        public var integrity: Integrity
    }

    /// Reads a query name under `zone`. Throws `notAProbe` for names that are not probes.
    public static func read(_ name: DNSName, zone: DNSName, key: ProbeKey) throws(ProbeError) -> Received {
        guard let prefix = name.prefixLabels(droppingSuffix: zone), !prefix.isEmpty else {
            throw ProbeError(.notAProbe, "no labels in front of the zone")
        }
        var chars: [UInt8] = []
        chars.reserveCapacity(prefix.count * 63)
        for label in prefix { chars += label }
        let (meta, sealed) = try ProbeMeta.openSealed(chars[...], zone: zone, key: key)
        let integrity: Integrity
        if chars.count != meta.totalCharacters {
            integrity = .lengthMismatch
        } else {
            // The tag verified, so the canonical meta characters are the sealed bytes re-encoded: no second HMAC.
            let expected = LabelEncoding.base32.encode(sealed) + filler(meta: meta, key: key)
            if expected == chars {
                integrity = .intact
            } else if equalIgnoringASCIICase(expected, chars) {
                integrity = .caseChanged
            } else {
                integrity = .rewritten
            }
        }
        return Received(meta: meta, characters: chars, integrity: integrity)
    }

    static func equalIgnoringASCIICase(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        for i in a.indices where lower(a[i]) != lower(b[i]) { return false }
        return true
    }

    @inline(__always) static func lower(_ c: UInt8) -> UInt8 { c >= 65 && c <= 90 ? c | 0x20 : c }
}
