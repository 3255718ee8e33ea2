extension DNSMessage {
    /// A query with one question in class IN (RFC 1035 4.1.1, 4.1.2): RD set when it goes to a
    /// recursive resolver, and an OPT record advertising `udpPayloadSize` when given (RFC 6891 6.1.2).
    public static func query(
        id: UInt16,
        name: String,
        type: DNSType,
        recursionDesired: Bool = true,
        udpPayloadSize: UInt16? = nil
    ) throws(DNSWireError) -> DNSMessage {
        DNSMessage(
            header: DNSHeader(id: id, recursionDesired: recursionDesired),
            questions: [DNSQuestion(name: try DNSName(name), type: type)],
            edns: udpPayloadSize.map { EDNS(udpPayloadSize: $0) }
        )
    }
}
