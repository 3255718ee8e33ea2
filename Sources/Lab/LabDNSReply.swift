/// A reply to a DNS probe sent from inside a lab namespace.
public struct LabDNSReply: Sendable, Hashable {
    /// The address the reply came from; with AnyIP aliases it must equal the address queried.
    public var source: String
    public var sourcePort: Int
    /// The whole message as received.
    public var bytes: [UInt8]
    /// Header TC bit (RFC 1035 section 4.1.1).
    public var truncated: Bool
    public var responseCode: Int
    public var answerCount: Int

    public var size: Int { bytes.count }
}
