import Base
import Foundation
import Testing

/// Resolver addresses that name their transport: every form users write, round trips through the
/// canonical text and JSON, and a typed error with its column for everything else.
struct ResolverTargetTests {
    @Test func everyFormParsesToItsTransportPortAndName() throws {
        let cases: [(String, DNSTransport, String, UInt16, String?, String?)] = [
            ("192.0.2.1", .udp, "192.0.2.1", 53, nil, nil),
            ("192.0.2.1:5353", .udp, "192.0.2.1", 5353, nil, nil),
            ("udp://192.0.2.1", .udp, "192.0.2.1", 53, nil, nil),
            ("tcp://192.0.2.1", .tcp, "192.0.2.1", 53, nil, nil),
            ("TCP://[2001:db8::53]:5300", .tcp, "2001:db8::53", 5300, nil, nil),
            ("tls://192.0.2.1", .tls, "192.0.2.1", 853, nil, nil),
            ("tls://192.0.2.1:8853#dns.example", .tls, "192.0.2.1", 8853, "dns.example", nil),
            ("tls://[2001:db8::53]#Dns.Example", .tls, "2001:db8::53", 853, "dns.example", nil),
            ("https://192.0.2.1/dns-query", .https, "192.0.2.1", 443, nil, "/dns-query"),
            ("https://[2001:db8::53]:8443/resolve#doh.example", .https, "2001:db8::53", 8443, "doh.example", "/resolve"),
            ("[2001:db8::53]:53", .udp, "2001:db8::53", 53, nil, nil),
            ("2001:db8::53", .udp, "2001:db8::53", 53, nil, nil),
        ]
        for (text, transport, host, port, name, path) in cases {
            let target = try ResolverTarget(parsing: text)
            #expect(target.transport == transport && target.endpoint.host == host && target.endpoint.port == port, "\(text)")
            #expect(target.serverName == name && target.path == path, "\(text)")
            // The canonical text parses back to the same value, and so does JSON.
            #expect(try ResolverTarget(parsing: target.description) == target, "\(text) -> \(target)")
            let json = try JSONEncoder().encode(target)
            #expect(try JSONDecoder().decode(ResolverTarget.self, from: json) == target)
        }
        #expect(try ResolverTarget(parsing: "192.0.2.1").description == "192.0.2.1:53")
        #expect(try ResolverTarget(parsing: "tls://192.0.2.1#dns.example").description == "tls://192.0.2.1:853#dns.example")
        #expect(try ResolverTarget(parsing: "https://192.0.2.1/dns-query#doh.example").url == "https://doh.example/dns-query")
        #expect(try ResolverTarget(parsing: "https://[2001:db8::1]:8443/q").url == "https://[2001:db8::1]:8443/q")
        #expect(try ResolverTarget(parsing: "tls://192.0.2.1").tlsName == "192.0.2.1")
    }

    @Test func badEntriesNameTheirCodeAndColumn() {
        let cases: [(String, ResolverTargetError.Code, Int)] = [
            ("", .empty, 1),
            ("quic://192.0.2.1", .unknownScheme, 1),
            ("tls://192.0.2.300", .badAddress, 7),
            ("tcp://192.0.2.1:99999", .badPort, 17),
            ("tcp://192.0.2.1:x", .badPort, 17),
            ("tls://[2001:db8::1", .missingBracket, 19),
            ("https://192.0.2.1", .missingPath, 18),
            ("https://192.0.2.1/q?dns=x", .badPath, 18),
            ("tcp://192.0.2.1#name.example", .nameNotAllowed, 16),
            ("tls://192.0.2.1#bad_name", .badServerName, 17),
            ("tls://192.0.2.1#", .badServerName, 17),
            ("https://dns.example/dns-query", .hostNameNeedsAddress, 9),
            ("udp://192.0.2.1/path", .trailingText, 16),
            ("tls://192.0.2.1 #x", .controlCharacter, 16),
            ("tls://192.0.2.1\u{7}", .controlCharacter, 16),
        ]
        for (text, code, column) in cases {
            #expect(throws: ResolverTargetError.self, "\(text)") { try ResolverTarget(parsing: text) }
            do {
                _ = try ResolverTarget(parsing: text)
            } catch {
                #expect(error.code == code && error.column == column, "\(text): \(error.code) at \(error.column): \(error)")
            }
        }
    }

    /// Seeded random texts built from the characters of every form: never a trap, always a value
    /// whose text parses back to it, or a typed error with a column inside the entry.
    @Test func randomEntriesNeverTrap() {
        let seed: UInt64 = 29
        var rng = SplitMix64(seed: seed)
        let alphabet = Array("udptcpslhtps:/[]#.0123456789abcdef-_xq?:: ")
        for _ in 0..<20_000 {
            let length = Int(rng.next() % 40)
            var text = String((0..<length).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] })
            if rng.next() % 2 == 0 { text = ["tls://", "https://", "tcp://", "udp://"][Int(rng.next() % 4)] + text }
            do {
                let target = try ResolverTarget(parsing: text)
                #expect((try? ResolverTarget(parsing: target.description)) == target, "seed \(seed): \(text)")
            } catch {
                #expect(error.column >= 1 && error.column <= max(1, text.count + 1), "seed \(seed): \(text): \(error)")
            }
        }
    }
}
