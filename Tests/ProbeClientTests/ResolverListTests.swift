import ProbeClient
import Testing

@Suite struct ResolverListTests {
    @Test func parsesEveryEntryShape() throws {
        var list = ResolverList()
        list.add(text: """
        # comment line
        198.51.100.7
        198.51.100.8:5353   # trailing comment
        [2001:db8::1]:53
        2001:db8::2

        203.0.113.0/30
        198.51.100.7
        """, source: "list.txt")
        #expect(list.issues.isEmpty)
        #expect(list.resolvers.map(\.description) == [
            "198.51.100.7:53", "198.51.100.8:5353", "[2001:db8::1]:53", "[2001:db8::2]:53",
            "203.0.113.1:53", "203.0.113.2:53",
        ])
    }

    @Test func badLinesAreReportedWithTheirNumberAndSkipped() throws {
        var list = ResolverList()
        list.add(text: "198.51.100.1\nnot-an-ip\n198.51.100.2:99999\n[2001:db8::1\n203.0.113.9/33\n198.51.100.3\n", source: "r.txt")
        #expect(list.resolvers.count == 2)
        #expect(list.issues.map(\.line) == [2, 3, 4, 5])
        #expect(list.issues[0].description == "r.txt:2: not an IP address: not-an-ip")
    }

    @Test func cidrBlocksAreCutAtTheCap() throws {
        let (all, none) = try ResolverList.parse(entry: "198.18.4.0/22")
        #expect(all.count == 1022 && none == nil)
        #expect(all.first?.description == "198.18.4.1:53" && all.last?.description == "198.18.7.254:53")
        let (cut, warning) = try ResolverList.parse(entry: "198.18.0.0/15", cidrCap: 100)
        #expect(cut.count == 100 && warning != nil)
        let (v6, _) = try ResolverList.parse(entry: "[2001:db8::/120]:53", cidrCap: 10)
        #expect(v6.count == 10 && v6[1].description == "[2001:db8::1]:53")
    }
}
