import Testing
@testable import TunnelVerify

struct IPPrefixTests {
    @Test func ipPrefixesContainTheirHostsAndNameTheFirst() throws {
        let v4 = try IPPrefix(parsing: "198.18.2.0/23")
        #expect(v4.contains("198.18.3.255") && !v4.contains("198.18.4.0") && v4.firstHost == "198.18.2.1")
        let v6 = try IPPrefix(parsing: "2001:db8:5::/48")
        #expect(v6.contains("2001:db8:5:ffff::1") && !v6.contains("2001:db8:6::1") && !v6.contains("198.18.2.1"))
        #expect(v6.firstHost == "2001:db8:5::1" && v6.description == "2001:db8:5::/48")
        #expect(try IPPrefix(parsing: "2001:db8::7/128").firstHost == "2001:db8::7")
        #expect(try IPPrefix(parsing: "0.0.0.0/0").contains("203.0.113.9"))
        #expect(IPPrefix(host: "2001:db8::1")?.length == 128 && IPPrefix(host: "x") == nil)
        #expect(throws: IPPrefix.Problem.self) { try IPPrefix(parsing: "198.18.2.0/+8") }
        #expect(throws: IPPrefix.Problem.self) { try IPPrefix(parsing: "/8") }
    }
}
