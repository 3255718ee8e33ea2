/// How much payload fits in a query name (RFC 1035 2.3.4: labels of at most 63 octets, names
/// of at most 255 octets on the wire, which is 253 characters of text without the final dot).
///
/// The arithmetic uses the domain's wire length, so a domain written with escapes is not
/// over-counted. Payload labels are 63 characters each, the last one shorter, as tunnels cut them.
public enum QNameCapacity {
    public static let maxNameCharacters = 253
    public static let maxLabelCharacters = 63

    /// Encoded characters that fit in labels placed in front of `domain`.
    ///
    /// Each payload label costs its characters plus one length octet (a dot in text). With
    /// `room` octets left, every 64 octets hold a full label and a remainder r holds r - 1.
    public static func payloadCharacters(under domain: DNSName) -> Int {
        let room = DNSName.maxWireLength - domain.wireLength
        guard room > 1 else { return 0 }
        let fullLabels = room / (maxLabelCharacters + 1)
        let remainder = room % (maxLabelCharacters + 1)
        return fullLabels * maxLabelCharacters + max(0, remainder - 1)
    }

    /// Raw bytes that fit after the tunnel's own per-query frame header of `frameOverhead`
    /// bytes, which travels inside the encoded payload; never negative.
    public static func maxPayloadBytes(under domain: DNSName, encoding: LabelEncoding, frameOverhead: Int = 0) -> Int {
        let bytes = encoding.maxBytes(forCharacters: payloadCharacters(under: domain))
        return max(0, bytes - max(0, frameOverhead))
    }

    /// Text length (no trailing dot) of a query name carrying `characters` encoded characters
    /// in 63-character labels in front of `domain`.
    public static func qnameCharacters(payloadCharacters characters: Int, under domain: DNSName) -> Int {
        guard characters > 0 else { return domain.textLength }
        let labels = (characters + maxLabelCharacters - 1) / maxLabelCharacters
        // One dot after each payload label, except when nothing follows (the root domain).
        let dots = domain.isRoot ? labels - 1 : labels
        return characters + dots + domain.textLength
    }

    /// Cuts encoded characters into labels of 63, all full except the last.
    public static func labels(splitting chars: [UInt8]) -> [[UInt8]] {
        var labels: [[UInt8]] = []
        labels.reserveCapacity((chars.count + maxLabelCharacters - 1) / maxLabelCharacters)
        var start = 0
        while start < chars.count {
            let end = min(start + maxLabelCharacters, chars.count)
            labels.append(Array(chars[start..<end]))
            start = end
        }
        return labels
    }
}
