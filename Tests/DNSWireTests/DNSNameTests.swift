import Base
import DNSWire
import Testing

@Suite("DNSName")
struct DNSNameTests {
    @Test func parsesDottedText() throws {
        let name = try DNSName("www.Example.COM.")
        #expect(name.labels == [Array("www".utf8), Array("Example".utf8), Array("COM".utf8)])
        #expect(name.description == "www.Example.COM")
        #expect(name.wireLength == 17)
        #expect(name.textLength == 15)
        #expect(name.labelCount == 3)
        #expect(try DNSName("www.Example.COM") == name)
    }

    @Test func rootForms() throws {
        #expect(try DNSName("") == .root)
        #expect(try DNSName(".") == .root)
        #expect(try DNSName(labels: []) == .root)
        #expect(DNSName.root.description == ".")
        #expect(DNSName.root.wireLength == 1)
        #expect(DNSName.root.textLength == 0)
        #expect(DNSName.root.labels.isEmpty)
        #expect(DNSName.root.isRoot)
    }

    @Test func escapesInText() throws {
        let name = try DNSName(#"a\.b.\000\255x.\\"#)
        #expect(name.labels == [Array("a.b".utf8), [0, 255, UInt8(ascii: "x")], [UInt8(ascii: "\\")]])
        #expect(name.description == #"a\.b.\000\255x.\\"#)
        #expect(name.textLength == name.description.utf8.count)
        #expect(try DNSName(name.description) == name)
    }

    @Test func descriptionRoundTripsRandomLabels() throws {
        var rng = SplitMix64(seed: 0xD15C)
        for _ in 0..<500 {
            let labels = (0..<Int.random(in: 1...4, using: &rng)).map { _ in rng.bytes(Int.random(in: 1...63, using: &rng)) }
            let name = try DNSName(labels: labels)
            #expect(try DNSName(name.description) == name)
            #expect(name.textLength == name.description.utf8.count)
        }
    }

    @Test(arguments: [
        ("a..b", DNSWireError.Code.emptyLabel),
        (".a", .emptyLabel),
        ("a.b..", .emptyLabel),
        (String(repeating: "x", count: 64), .labelTooLong),
        ([String](repeating: String(repeating: "x", count: 63), count: 4).joined(separator: "."), .nameTooLong),
        ("a b", .invalidCharacter),
        ("caf\u{E9}", .invalidCharacter),
        (#"a\25"#, .invalidCharacter),
        (#"a\256"#, .invalidCharacter),
        (#"a\"#, .invalidCharacter),
        ("tab\there", .invalidCharacter),
    ])
    func rejectsBadText(text: String, code: DNSWireError.Code) {
        #expect(throws: DNSWireError(code, "")) { try DNSName(text) }
    }

    @Test func longestNames() throws {
        // 63 + 63 + 63 + 61 characters and 3 dots: 253 characters, 255 octets on the wire.
        let labels = [63, 63, 63, 61].map { String(repeating: "z", count: $0) }
        let name = try DNSName(labels.joined(separator: "."))
        #expect(name.textLength == 253)
        #expect(name.wireLength == 255)
        #expect(throws: DNSWireError(.nameTooLong, "")) { try DNSName(labels.joined(separator: ".") + "z") }
        #expect(throws: DNSWireError(.nameTooLong, "")) { try name.appending(DNSName("a")) }
    }

    @Test func labelInitValidates() {
        #expect(throws: DNSWireError(.emptyLabel, "")) { try DNSName(labels: [[1], []]) }
        #expect(throws: DNSWireError(.labelTooLong, "")) { try DNSName(labels: [[UInt8](repeating: 1, count: 64)]) }
        #expect(throws: DNSWireError(.nameTooLong, "")) {
            try DNSName(labels: [[UInt8]](repeating: [UInt8](repeating: 1, count: 63), count: 4))
        }
    }

    @Test func caseHandling() throws {
        let mixed = try DNSName("AbC.Example")
        let lower = try DNSName("abc.example")
        #expect(mixed != lower)
        #expect(Set([mixed, lower]).count == 2)
        #expect(mixed.equalsIgnoringCase(lower))
        #expect(mixed.lowercased() == lower)
        #expect(!mixed.equalsIgnoringCase(try DNSName("abd.example")))
        // Only ASCII folds: 0xC4 and 0xE4 (Latin-1 A/a umlaut) stay distinct.
        #expect(!(try DNSName(labels: [[0xC4]])).equalsIgnoringCase(try DNSName(labels: [[0xE4]])))
    }

    @Test func hierarchy() throws {
        let domain = try DNSName("Vpn.Example.com")
        let query = try DNSName("aBc.dEf.vpn.example.COM")
        #expect(query.isSubdomain(of: domain))
        #expect(domain.isSubdomain(of: domain))
        #expect(query.isSubdomain(of: .root))
        #expect(!domain.isSubdomain(of: query))
        // Byte-suffix match that is not on a label boundary.
        #expect(!(try DNSName("xvpn.example.com")).isSubdomain(of: domain))
        #expect(query.prefixLabels(droppingSuffix: domain) == [Array("aBc".utf8), Array("dEf".utf8)])
        #expect(domain.prefixLabels(droppingSuffix: domain) == [])
        #expect(try DNSName("other.org").prefixLabels(droppingSuffix: domain) == nil)
        #expect(try DNSName("aBc.dEf").appending(domain) == (try DNSName("aBc.dEf.Vpn.Example.com")))
        #expect(try DNSName.root.appending(domain) == domain)
    }
}
