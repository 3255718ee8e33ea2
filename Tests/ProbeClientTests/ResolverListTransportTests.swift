import Base
import ProbeClient
import Testing

/// Resolver files with addresses that name their transport: `#name` after a tls:// or https://
/// address is its server name, a `#` after a blank a comment; bad entries carry line and column.
@Suite struct ResolverListTransportTests {
    @Test func transportsServerNamesAndCommentsInOneFile() {
        var list = ResolverList()
        list.add(text: """
        198.51.100.7            # plain UDP
        tcp://198.51.100.8
        tls://198.51.100.7#dns.example   # DoT with its name
        https://[2001:db8::53]/dns-query#doh.example
        tls://198.51.100.9 #a comment, not a name
        """, source: "r.txt")
        #expect(list.issues.isEmpty, "\(list.issues)")
        #expect(list.resolvers.map(\.description) == ["198.51.100.7:53", "198.51.100.8:53", "198.51.100.7:853", "[2001:db8::53]:443", "198.51.100.9:853"])
        let described = list.resolvers.map { list.target(of: $0).description }
        #expect(described == ["198.51.100.7:53", "tcp://198.51.100.8:53", "tls://198.51.100.7:853#dns.example",
                              "https://[2001:db8::53]:443/dns-query#doh.example", "tls://198.51.100.9:853"])
        #expect(list.target(of: list.resolvers[0]).transport == .udp)
    }

    @Test func aSecondTransportForOneEndpointIsAnIssue() {
        var list = ResolverList()
        list.add(text: "198.51.100.7\ntcp://198.51.100.7:53\n", source: "r.txt")
        #expect(list.issues.count == 1 && list.issues.first?.line == 2)
        #expect(list.issues.first?.reason.contains("one transport per address and port") == true)
    }

    @Test func badEntriesNameLineAndColumn() {
        var list = ResolverList()
        list.add(text: "198.51.100.1\n  tls://198.51.100.300#x.example\nhttps://dns.example/dns-query\n", source: "r.txt")
        #expect(list.resolvers.count == 1)
        #expect(list.issues.map(\.line) == [2, 3])
        // Column 9 of the line: the two leading blanks count.
        #expect(list.issues[0].description.hasPrefix("r.txt:2: column 9: '198.51.100.300' is not an IP address"), "\(list.issues[0])")
        #expect(list.issues[1].reason.contains("write the resolver's address and the name after '#'"))
    }
}
