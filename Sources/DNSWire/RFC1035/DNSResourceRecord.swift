/// A resource record (RFC 1035 4.1.3). CLASS is kept raw because the field is not always a class.
public struct DNSResourceRecord: Hashable, Sendable {
    public var name: DNSName
    public var type: DNSType
    public var rawClass: UInt16
    public var ttl: UInt32
    public var rdata: DNSRData

    /// The type comes from `rdata`. `.unknown` data has no type of its own and gets TYPE0
    /// (reserved); use `init(name:type:rawClass:ttl:rdata:)` for it.
    public init(name: DNSName, ttl: UInt32, rdata: DNSRData, dnsClass: DNSClass = .in) {
        self.name = name
        self.type = rdata.naturalType ?? DNSType(rawValue: 0)
        self.rawClass = dnsClass.rawValue
        self.ttl = ttl
        self.rdata = rdata
    }

    /// Any combination. Serializing a typed `rdata` whose type differs from `type` throws;
    /// `.unknown` bytes may go under any type (handy for deliberately malformed answers), but
    /// read back they decode as that type.
    public init(name: DNSName, type: DNSType, rawClass: UInt16, ttl: UInt32, rdata: DNSRData) {
        self.name = name
        self.type = type
        self.rawClass = rawClass
        self.ttl = ttl
        self.rdata = rdata
    }

    public var dnsClass: DNSClass {
        get { DNSClass(rawValue: rawClass) }
        set { rawClass = newValue.rawValue }
    }
}
