import Base
import ProbeClient
import Testing

/// Resolver lists as files arrive from the field: CRLF line ends, a UTF-8 byte-order mark, a stray
/// Latin-1 byte. Each line is read on its own; a bad one is named by its number.
@Suite struct ResolverListBytesTests {
    @Test func crlfAndABOMAreReadLineByLine() {
        var list = ResolverList()
        let text = "\u{FEFF}198.51.100.1\r\n198.51.100.2:5353\r\n# comment\r\n\r\n[2001:db8::1]:53\r\n203.0.113.9"
        list.add(bytes: Array(text.utf8), source: "crlf.txt")
        #expect(list.issues.isEmpty, "\(list.issues)")
        #expect(list.resolvers.map(\.description) == ["198.51.100.1:53", "198.51.100.2:5353", "[2001:db8::1]:53", "203.0.113.9:53"])
    }

    @Test func aLatin1CommentIsHarmlessAndALatin1EntryIsNamed() {
        var list = ResolverList()
        // "caf\u{E9}" in Latin-1 is 63 61 66 E9: not UTF-8.
        let bytes: [UInt8] = Array("198.51.100.1 # caf".utf8) + [0xE9] + Array("\n198.51.100.2\u{0}\n".utf8)
            + Array("198.51.100.".utf8) + [0xB3] + Array("\r\n198.51.100.4\r\n".utf8)
        list.add(bytes: bytes, source: "latin1.txt")
        #expect(list.resolvers.map(\.description) == ["198.51.100.1:53", "198.51.100.4:53"])
        #expect(list.issues.map(\.line) == [2, 3])
        #expect(list.issues.last?.reason.contains("UTF-8") == true)
        #expect(list.issues.allSatisfy { $0.source == "latin1.txt" })
    }

    @Test func textAndBytesAgree() {
        let text = "198.51.100.1\r\n198.51.100.2\n"
        var a = ResolverList(), b = ResolverList()
        a.add(text: text, source: "t")
        b.add(bytes: Array(text.utf8), source: "t")
        #expect(a.resolvers == b.resolvers && a.resolvers.count == 2)
    }

    @Test func arbitraryBytesNeverCrash() {
        var generator = SplitMix64(seed: 13)
        for _ in 0..<500 {
            let bytes = (0..<Int(generator.next() % 200)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            var list = ResolverList()
            list.add(bytes: bytes, source: "fuzz")
            #expect(list.issues.allSatisfy { $0.line >= 1 })
        }
    }
}
