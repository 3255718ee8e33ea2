import DNSWire

/// Shared inputs: names, a message with every supported record type, and raw-byte helpers.
enum Fixtures {
    static func name(_ text: String) -> DNSName {
        // Test literals are valid by construction; a typo should fail loudly.
        do { return try DNSName(text) } catch { fatalError("bad fixture name \(text): \(error)") }
    }

    /// A query as MasterDnsVPN sends it: TXT, RD, EDNS 4096.
    static var tunnelQuery: DNSMessage {
        DNSMessage(
            header: DNSHeader(id: 0xBEEF, recursionDesired: true),
            questions: [DNSQuestion(name: name("0a1b2c3d4e5f.vpn.abcd.xyz"), type: .txt)],
            edns: EDNS(udpPayloadSize: 4096)
        )
    }

    /// One record of every decoded type plus an unknown one, with suffixes repeated so that
    /// compression has work to do.
    static var everyType: DNSMessage {
        let zone = name("Example.COM")
        let host = name("www.Example.COM")
        return DNSMessage(
            header: DNSHeader(
                id: 0x1234, isResponse: true, authoritative: true, recursionDesired: true,
                recursionAvailable: true, authenticData: true
            ),
            questions: [DNSQuestion(name: host, type: .any)],
            answers: [
                DNSResourceRecord(name: host, ttl: 300, rdata: .a([192, 0, 2, 1])),
                DNSResourceRecord(name: host, ttl: 300, rdata: .aaaa([0x20, 0x01, 0x0D, 0xB8] + [UInt8](repeating: 0, count: 11) + [1])),
                DNSResourceRecord(name: name("alias.Example.COM"), ttl: 60, rdata: .cname(host)),
                DNSResourceRecord(name: zone, ttl: 3600, rdata: .mx(preference: 10, exchange: name("mail.Example.COM"))),
                DNSResourceRecord(name: host, ttl: 0, rdata: .txt([Array("v=spf1 -all".utf8), [], [UInt8](repeating: 0x41, count: 255)])),
                DNSResourceRecord(name: host, ttl: 1, rdata: .null([0, 1, 2, 3, 0xFF])),
                DNSResourceRecord(name: name("_sip._udp.Example.COM"), ttl: 86400,
                                  rdata: .srv(priority: 1, weight: 2, port: 5060, target: host)),
                DNSResourceRecord(name: name("1.2.0.192.in-addr.arpa"), ttl: 5, rdata: .ptr(host)),
                DNSResourceRecord(name: host, type: DNSType(rawValue: 65399), rawClass: 1, ttl: 7, rdata: .unknown([9, 8, 7])),
            ],
            authorities: [
                DNSResourceRecord(name: zone, ttl: 3600, rdata: .ns(name("ns1.Example.COM"))),
                DNSResourceRecord(name: zone, ttl: 3600, rdata: .soa(
                    mname: name("ns1.Example.COM"), rname: name("hostmaster.Example.COM"),
                    serial: 2024010101, refresh: 7200, retry: 3600, expire: 1209600, minimum: 300
                )),
            ],
            additionals: [
                DNSResourceRecord(name: name("ns1.Example.COM"), ttl: 3600, rdata: .a([198, 51, 100, 53])),
                DNSResourceRecord(name: name("chaos.example"), ttl: 0, rdata: .txt([Array("hi".utf8)]), dnsClass: .chaos),
            ],
            edns: EDNS(udpPayloadSize: 1232, extendedRcodeHigh: 0, version: 0, dnssecOK: true,
                       options: [EDNSOption(code: 10, data: [1, 2, 3, 4, 5, 6, 7, 8]), EDNSOption(code: 12, data: [])])
        )
    }

    /// A header with the given counts, id 0, flags 0.
    static func header(qd: UInt16 = 0, an: UInt16 = 0, ns: UInt16 = 0, ar: UInt16 = 0) -> [UInt8] {
        [0, 0, 0, 0] + [qd, an, ns, ar].flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    }

    /// "example.com" in uncompressed wire form.
    static let exampleCom: [UInt8] = [7] + Array("example".utf8) + [3] + Array("com".utf8) + [0]

    /// TYPE A, CLASS IN.
    static let typeAClassIN: [UInt8] = [0, 1, 0, 1]
}
