/// Leak-zone probes (kind 5, docs/PROTOCOL.md "Leak zone"): a *mark* name makes the responder
/// record the source address of every resolver that asks for it; a *report* name asks for that
/// record, answered in one authenticated TXT string.
///
/// Parameters (10 bytes): byte 0 the operation (0 mark, 1 report); for a report bytes 1-8 the
/// nonce of the mark it asks about. Every name has a fresh nonce of its own, so no cache answers.
public enum LeakProbe {
    public static let markOperation: UInt8 = 0
    public static let reportOperation: UInt8 = 1
    /// At most this many sources are reported per mark (the rest are counted, not listed).
    public static let maximumSources = 16
    static let reportTagLabel: UInt8 = 0x4C

    public static func mark(nonce: [UInt8]) -> ProbeMeta {
        ProbeMeta(kind: .leak, nonce: nonce, totalCharacters: ProbeMeta.characterCount,
                  parameters: [markOperation] + Array(repeating: 0, count: ProbeMeta.parameterLength - 1))
    }

    public static func report(nonce: [UInt8], about mark: [UInt8]) -> ProbeMeta {
        precondition(mark.count == ProbeMeta.nonceLength)
        return ProbeMeta(kind: .leak, nonce: nonce, totalCharacters: ProbeMeta.characterCount,
                         parameters: [reportOperation] + mark + [0])
    }

    /// The report payload: version/kind, total sources seen (16 bits), listed count, then per
    /// source its family (4 or 6) and address; then an 8-byte tag HMAC(K, 0x4C || nonce || body).
    public static func sealReport(sources: [[UInt8]], total: Int, nonce: [UInt8], key: ProbeKey) -> [UInt8] {
        let listed = Array(sources.prefix(maximumSources))
        var body: [UInt8] = [ProbeMeta.version << 4 | ProbeKind.leak.rawValue,
                             UInt8(truncatingIfNeeded: min(total, 65535) >> 8), UInt8(truncatingIfNeeded: min(total, 65535)),
                             UInt8(listed.count)]
        for source in listed {
            body.append(source.count == 16 ? 6 : 4)
            body += source
        }
        return body + Keystream.tag(key: key, [reportTagLabel], nonce, body)
    }

    /// Opens a report: the sources as text addresses and the total count, or why it is not one.
    public static func openReport(_ bytes: [UInt8], nonce: [UInt8], key: ProbeKey) throws(ProbeError) -> (sources: [String], total: Int) {
        guard bytes.count >= 4 + ProbeMeta.tagLength else { throw ProbeError(.malformedReply, "leak report of \(bytes.count) bytes") }
        let body = Array(bytes.dropLast(ProbeMeta.tagLength))
        guard Keystream.equal(Keystream.tag(key: key, [reportTagLabel], nonce, body), Array(bytes.suffix(ProbeMeta.tagLength))) else {
            throw ProbeError(.badTag, "leak report tag does not verify")
        }
        guard body[0] == ProbeMeta.version << 4 | ProbeKind.leak.rawValue else { throw ProbeError(.malformedReply, "not a leak report") }
        let total = Int(body[1]) << 8 | Int(body[2])
        var index = 4
        var sources: [String] = []
        for _ in 0..<Int(body[3]) {
            guard index < body.count else { throw ProbeError(.malformedReply, "leak report cut at source \(sources.count)") }
            let length = body[index] == 6 ? 16 : 4
            guard body[index] == 4 || body[index] == 6, index + 1 + length <= body.count else {
                throw ProbeError(.malformedReply, "leak report source \(sources.count) is malformed")
            }
            let address = Array(body[(index + 1)..<(index + 1 + length)])
            sources.append(length == 4 ? address.map(String.init).joined(separator: ".") : v6Text(address))
            index += 1 + length
        }
        return (sources, total)
    }

    static func v6Text(_ bytes: [UInt8]) -> String {
        stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }.joined(separator: ":")
    }
}
