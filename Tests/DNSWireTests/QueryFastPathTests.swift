import Base
import DNSWire
import Testing

/// The per-query shortcuts of issue 27, item 9 build exactly what the general code builds.
@Suite struct QueryFastPathTests {
    static let zones = ["vpn.lab.test", "T.Example", "a\\.b.c", "x\\200y.z", "."].map { Fixtures.name($0) }

    /// `DNSName(payload:under:)` is `DNSName(labels: QNameCapacity.labels(splitting:) + zone.labels)`,
    /// the same name and the same error, at every payload length up to past the limit.
    @Test func payloadNamesMatchTheLabelsPath() throws {
        for zone in Self.zones {
            for count in 0...260 {
                let payload = (0..<count).map { UInt8(ascii: "a") + UInt8($0 % 26) }
                let general = Result { () throws(DNSWireError) in
                    try DNSName(labels: QNameCapacity.labels(splitting: payload) + zone.labels)
                }
                let fast = Result { () throws(DNSWireError) in try DNSName(payload: payload, under: zone) }
                switch (general, fast) {
                case (.success(let a), .success(let b)): #expect(a == b, "\(count) under \(zone)")
                case (.failure(let a), .failure(let b)): #expect(a.code == b.code, "\(count) under \(zone)")
                default: Issue.record("\(count) characters under \(zone): \(general) vs \(fast)")
                }
            }
        }
    }

    @Test func lowercasedPresentationInPlace() {
        for zone in Self.zones + [Fixtures.name("MiXeD.CaSe.\\065B")] {
            let inPlace = zone.withLowercasedPresentationBytes { Array($0) }
            #expect(inPlace == zone.lowercased().presentationBytes, "\(zone)")
        }
    }

    /// `queryBytes` is byte for byte the serialized message, for names, types, RD and EDNS sizes.
    @Test func queryBytesMatchTheSerializer() throws {
        var rng = SplitMix64(seed: 27)
        for zone in Self.zones {
            for type in [DNSType.txt, .null, .a, .soa, DNSType(rawValue: 65_535)] {
                for rd in [true, false] {
                    for size in [nil, 512, 1232, 4096, 65_535] as [UInt16?] {
                        let payload = (0..<Int(rng.next() % 100)).map { _ in UInt8(ascii: "a") + UInt8(rng.next() % 26) }
                        let name = try DNSName(payload: payload, under: zone)
                        let id = UInt16(truncatingIfNeeded: rng.next())
                        let message = DNSMessage(header: DNSHeader(id: id, recursionDesired: rd),
                                                 questions: [DNSQuestion(name: name, type: type)],
                                                 edns: size.map { EDNS(udpPayloadSize: $0) })
                        #expect(DNSMessage.queryBytes(id: id, name: name, type: type, recursionDesired: rd, udpPayloadSize: size)
                                == (try message.serialized()), "\(name) \(type) rd \(rd) edns \(String(describing: size))")
                    }
                }
            }
        }
    }

    /// The exact-bytes shortcut of `equalsIgnoringCase` changes no answer.
    @Test func caseInsensitiveEquality() {
        let a = Fixtures.name("Abc.Example"), b = Fixtures.name("aBC.example"), c = Fixtures.name("abd.example")
        #expect(a.equalsIgnoringCase(a) && a.equalsIgnoringCase(b) && b.equalsIgnoringCase(a))
        #expect(!a.equalsIgnoringCase(c) && !a.equalsIgnoringCase(Fixtures.name("abc.example.org")))
    }
}
