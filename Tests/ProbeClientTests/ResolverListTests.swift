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

    /// Issue 27, item 7: repeated and overlapping blocks are merged before anything is expanded.
    @Test func repeatedAndOverlappingBlocksAreExpandedOnce() throws {
        var list = ResolverList()
        list.add(text: String(repeating: "0.0.0.0/0\n", count: 1000), source: "all.txt")
        // The cap cuts each block to its first 65,536 addresses; the other 999 lines add none.
        #expect(list.resolvers.count == ResolverList.defaultCIDRCap)
        #expect(list.expandedAddresses == ResolverList.defaultCIDRCap)
        #expect(list.resolvers.first?.description == "0.0.0.1:53" && list.resolvers.last?.description == "0.1.0.0:53")
        #expect(list.issues.count == 1000 && list.issues.allSatisfy { $0.reason.contains("cap") })

        var pieces = ResolverList()
        pieces.add(text: """
        198.18.0.0/24
        198.18.0.128/25
        198.18.0.0/23
        198.18.0.7
        198.18.1.0/25:5353
        198.18.0.0/24
        198.18.2.5
        198.18.2.0/30
        [2001:db8::/120]:53
        [2001:db8::80/121]:53
        """, source: "pieces.txt")
        // What expanding every entry on its own and keeping the first of each address gives.
        var expected: [String] = []
        var seen: Set<String> = []
        for entry in ["198.18.0.0/24", "198.18.0.128/25", "198.18.0.0/23", "198.18.0.7", "198.18.1.0/25:5353",
                      "198.18.0.0/24", "198.18.2.5", "198.18.2.0/30", "[2001:db8::/120]:53", "[2001:db8::80/121]:53"] {
            for e in try ResolverList.parse(entry: entry).0 where seen.insert(e.description).inserted {
                expected.append(e.description)
            }
        }
        #expect(pieces.issues.isEmpty)
        #expect(pieces.resolvers.map(\.description) == expected)
        // Made once each: the /24 (254), the /23's part outside it (256), the two single addresses (made,
        // then kept or dropped by the seen set), the /25 on port 5353 (126), the /30 (2), the IPv6 /120
        // (256); the repeated /24, the /25 and /121 inside earlier blocks make none.
        #expect(pieces.resolvers.count == 254 + 256 + 126 + 1 + 2 + 256)
    }
}
