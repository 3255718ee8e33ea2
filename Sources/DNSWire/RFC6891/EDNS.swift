/// The EDNS(0) parameters a message carries in its OPT pseudo-record (RFC 6891 6.1).
///
/// On the wire the OPT record sits in the additional section with the root as owner, the
/// payload size in CLASS, and extended rcode, version and DO packed into TTL (6.1.3).
/// `DNSMessage` moves it out of `additionals` into this value and back.
public struct EDNS: Hashable, Sendable {
    /// Largest UDP payload the sender can reassemble (6.2.3); 1232 is the DNS Flag Day 2020 value.
    public var udpPayloadSize: UInt16
    /// Upper 8 bits of the 12-bit rcode; `DNSMessage.rcode` reads and writes it.
    public var extendedRcodeHigh: UInt8
    public var version: UInt8
    /// DO bit (RFC 3225).
    public var dnssecOK: Bool
    public var options: [EDNSOption]

    public init(
        udpPayloadSize: UInt16 = 1232,
        extendedRcodeHigh: UInt8 = 0,
        version: UInt8 = 0,
        dnssecOK: Bool = false,
        options: [EDNSOption] = []
    ) {
        self.udpPayloadSize = udpPayloadSize
        self.extendedRcodeHigh = extendedRcodeHigh
        self.version = version
        self.dnssecOK = dnssecOK
        self.options = options
    }

    /// The OPT TTL field (6.1.3): EXTENDED-RCODE, VERSION, DO, then 15 Z bits sent as zero.
    internal var ttl: UInt32 {
        UInt32(extendedRcodeHigh) << 24 | UInt32(version) << 16 | (dnssecOK ? 0x8000 : 0)
    }

    /// Z bits are ignored on read as 6.1.4 asks, so they do not survive a round trip.
    internal init(payloadSize: UInt16, ttl: UInt32, options: [EDNSOption]) {
        self.init(
            udpPayloadSize: payloadSize,
            extendedRcodeHigh: UInt8(truncatingIfNeeded: ttl >> 24),
            version: UInt8(truncatingIfNeeded: ttl >> 16),
            dnssecOK: ttl & 0x8000 != 0,
            options: options
        )
    }
}
