/// One entry of the question section (RFC 1035 4.1.2).
public struct DNSQuestion: Hashable, Sendable {
    public var name: DNSName
    public var type: DNSType
    public var dnsClass: DNSClass

    public init(name: DNSName, type: DNSType, dnsClass: DNSClass = .in) {
        self.name = name
        self.type = type
        self.dnsClass = dnsClass
    }
}
