import Base
import Foundation
import Testing

/// One address, endpoint and prefix parser for every command: what `inet_pton` takes, ports in
/// range, one error whose description is the reason.
struct AddressTests {
    @Test func addressesReadAsTheKernelReadsThemAndWriteCanonically() throws {
        #expect(IPAddress("192.0.2.1") == .v4(0xC000_0201))
        #expect(IPAddress("2001:DB8:0:0:0:0:0:1")?.description == "2001:db8::1")
        #expect(IPAddress("::ffff:192.0.2.1")?.description == "::ffff:c000:201")
        for bad in ["", "192.0.2", "192.0.2.256", "192.0.2.1.5", "2001:db8::1::2", "::g", "192.0.2.1\0junk", " 192.0.2.1", "example.test"] {
            #expect(IPAddress(bad) == nil, "\(bad) was taken")
        }
        #expect(throws: AddressError.controlCharacter) { try IPAddress(parsing: "192.0.2.1\n") }
        let v6 = try IPAddress(parsing: "2001:db8:1:2:3:4:5:6")
        #expect(IPAddress(bytes: v6.bytes) == v6 && v6.bytes.count == 16)
        #expect(IPAddress(bytes: [198, 51, 100, 7])?.description == "198.51.100.7" && IPAddress(bytes: [1, 2, 3]) == nil)
        #expect(IPAddress("192.0.2.9")! < IPAddress("198.51.100.1")! && IPAddress("203.0.113.1")! < IPAddress("::1")!)
    }

    @Test func endpointsTakeEveryFormScannersUse() throws {
        #expect(try Endpoint(parsing: "192.0.2.1", defaultPort: 53).description == "192.0.2.1:53")
        #expect(try Endpoint(parsing: "192.0.2.1:5353", defaultPort: 53).port == 5353)
        #expect(try Endpoint(parsing: "2001:db8::1", defaultPort: 53).description == "[2001:db8::1]:53")
        #expect(try Endpoint(parsing: "[2001:db8::1]:853", defaultPort: 53).port == 853)
        #expect(try Endpoint(parsing: "[2001:db8::1]", defaultPort: 53).port == 53)
        #expect(try Endpoint(parsing: "0.0.0.0:0", defaultPort: nil, allowZeroPort: true).port == 0)
        let cases: [(String, AddressError)] = [
            ("192.0.2.1:0", .portOutOfRange(0)), ("192.0.2.1:65536", .portOutOfRange(65536)),
            ("192.0.2.1:x", .badPort("x")), ("192.0.2.1:", .badPort("")), ("[2001:db8::1", .missingBracket),
            ("[2001:db8::1]x", .badPort("x")), ("example.test:53", .notAnAddress), ("192.0.2.1\t", .controlCharacter),
            ("192.0.2.1:99999999999999999999", .badPort("99999999999999999999")),
        ]
        for (text, error) in cases {
            #expect(throws: error, "\(text)") { try Endpoint(parsing: text, defaultPort: 53) }
        }
        #expect(throws: AddressError.missingPort) { try Endpoint(parsing: "192.0.2.1", defaultPort: nil) }
        #expect(AddressError.portOutOfRange(0).description == "port 0 out of range 1-65535")
    }

    @Test func endpointsKeepTheirJSONForm() throws {
        let endpoint = try Endpoint(parsing: "[2001:db8::53]:5353", defaultPort: nil)
        let json = String(decoding: try JSONEncoder().encode(endpoint), as: UTF8.self)
        #expect(json.contains("\"host\":\"2001:db8::53\"") && json.contains("\"port\":5353"))
        #expect(try JSONDecoder().decode(Endpoint.self, from: Data(json.utf8)) == endpoint)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Endpoint.self, from: Data(#"{"host":"x","port":53}"#.utf8)) }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Endpoint.self, from: Data(#"{"host":"192.0.2.1","port":70000}"#.utf8)) }
    }

    @Test func prefixesContainTheirHostsAndNameTheFirst() throws {
        let v4 = try IPPrefix(parsing: "198.18.2.0/23")
        #expect(v4.contains("198.18.3.255") && !v4.contains("198.18.4.0") && v4.firstHost.description == "198.18.2.1")
        let v6 = try IPPrefix(parsing: "2001:db8:5::/48")
        #expect(v6.contains("2001:db8:5:ffff::1") && !v6.contains("2001:db8:6::1") && !v6.contains("198.18.2.1"))
        #expect(v6.firstHost.description == "2001:db8:5::1" && v6.description == "2001:db8:5::/48" && v6.family == 6)
        #expect(try IPPrefix(parsing: "2001:db8::7/128").firstHost.description == "2001:db8::7")
        #expect(try IPPrefix(parsing: "0.0.0.0/0").contains("203.0.113.9"))
        #expect(IPPrefix(host: "2001:db8::1")?.length == 128 && IPPrefix(host: "x") == nil)
        #expect(throws: AddressError.notAPrefix) { try IPPrefix(parsing: "198.18.2.0/+8") }
        #expect(throws: AddressError.notAPrefix) { try IPPrefix(parsing: "/8") }
        #expect(throws: AddressError.lengthOutOfRange(maximum: 32)) { try IPPrefix(parsing: "198.18.2.0/33") }
        #expect(throws: AddressError.hostBitsSet(suggestion: "198.18.2.0/23")) { try IPPrefix(parsing: "198.18.3.0/23") }
    }
}
