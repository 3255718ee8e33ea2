/// Why one probe failed, as the scan report names it.
public enum ProbeFailure: String, Codable, Sendable, CaseIterable {
    case timeout
    /// The response came back with the TC bit: it did not fit the path's UDP size.
    case tc
    case servfail, refused, formerr, nxdomain
    /// Any other rcode.
    case rcode
    /// The content that arrived differs from what was sent (or what the responder sent).
    case rewritten
    /// A different number of characters or bytes arrived.
    case wrongSize
    /// Letter case changed on the way, which a case-sensitive encoding cannot survive.
    case caseChanged
    /// An answer that the responder did not make (hijacked or forged).
    case unauthenticated
    /// NOERROR without the probe's records.
    case noAnswer
    case malformed
    case sendFailed
    /// The answer is larger than the EDNS size the resolver advertises upstream, and the responder
    /// honours that size (`serve --edns honor`): over UDP it would go out truncated.
    case upstreamEDNS

    /// Failures worth another attempt at the same size: they say nothing about a size limit.
    public var isTransient: Bool { self == .timeout || self == .servfail || self == .sendFailed }

    public var phrase: String {
        switch self {
        case .timeout: "timeout"
        case .tc: "TC bit"
        case .servfail: "SERVFAIL"
        case .refused: "REFUSED"
        case .formerr: "FORMERR"
        case .nxdomain: "NXDOMAIN from the resolver"
        case .rcode: "unexpected rcode"
        case .rewritten: "payload rewritten"
        case .wrongSize: "wrong size"
        case .caseChanged: "case changed"
        case .unauthenticated: "answer not from the responder"
        case .noAnswer: "no probe records in the answer"
        case .malformed: "malformed response"
        case .sendFailed: "send failed"
        case .upstreamEDNS: "above the EDNS size the resolver advertises upstream"
        }
    }

    /// How a size search names this failure when it bounds the search.
    public var sizeLimit: SizeLimit {
        switch self {
        case .tc: .resolverLimit
        default: SizeLimit(rawValue: rawValue) ?? .unknown
        }
    }
}
