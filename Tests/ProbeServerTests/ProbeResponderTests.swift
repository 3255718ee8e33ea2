import Fates
import Base
import DNSWire
import ProbeClient
import ProbeProtocol
import ProbeServer
import Testing

let key = try! ProbeKey(bytes: Array(0..<32))
let zone = try! DNSName("vpn.lab.test")
let responder = ProbeResponder(configuration: .init(zone: zone, key: key,
                                                    nameServers: [(try! DNSName("ns.vpn.lab.test"), [198, 18, 1, 2])]))

func query(_ name: DNSName, _ type: DNSType = .txt, edns: UInt16? = 4096) throws -> [UInt8] {
    var h = DNSHeader(id: 0x1234)
    h.recursionDesired = true
    return try DNSMessage(header: h, questions: [DNSQuestion(name: name, type: type)],
                          edns: edns.map { EDNS(udpPayloadSize: $0) }).serialized()
}

@Suite struct ProbeResponderTests {
    @Test func refusesNamesOutsideTheZoneWithoutAmplifying() throws {
        let q = try query(DNSName("example.org"))
        let out = responder.respond(to: q)
        let r = try DNSMessage(parsing: #require(out.response))
        #expect(r.rcode == .refused && r.header.id == 0x1234 && r.header.isResponse)
        #expect(out.response!.count <= q.count)
    }

    @Test func unauthenticatedNamesUnderTheZoneGetNoDataNoLargerThanTheQuery() throws {
        let q = try query(DNSName("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.vpn.lab.test"))
        let out = responder.respond(to: q)
        let r = try DNSMessage(parsing: #require(out.response))
        #expect(r.rcode == .noError && r.answers.isEmpty && r.authorities.isEmpty)
        #expect(out.response!.count <= q.count)
        #expect(out.disposition == .noData)
    }

    /// Over TCP (over UDP such answers are larger than their query: TC, TCPListenerTests).
    @Test func apexAnswersSOAAndNSWithGlue() throws {
        func respond(_ q: [UInt8]) -> [UInt8]? { responder.respond(to: q, source: [], transport: .tcp).response }
        let soa = try DNSMessage(parsing: #require(respond(query(zone, .soa))))
        #expect(soa.answers.first?.type == .soa && soa.header.authoritative)
        let ns = try DNSMessage(parsing: #require(respond(query(zone, .ns))))
        #expect(ns.answers.first?.rdata == .ns(try DNSName("ns.vpn.lab.test")))
        #expect(ns.additionals.first?.rdata == .a([198, 18, 1, 2]))
    }

    @Test func echoProbeGetsAnAuthenticatedReply() throws {
        let nonce: [UInt8] = [8, 7, 6, 5, 4, 3, 2, 1]
        let meta = ProbeMeta(kind: .echo, nonce: nonce, totalCharacters: ProbeMeta.characterCount)
        let name = try ProbeName.build(meta: meta, zone: zone, key: key)
        let r = try DNSMessage(parsing: #require(responder.respond(to: query(name)).response))
        guard case .txt(let strings) = try #require(r.answers.first).rdata else { Issue.record("not TXT"); return }
        let reply = try ProbeReply.open(strings[0], nonce: nonce, key: key)
        #expect(reply.integrity == .intact && reply.receivedCharacters == ProbeMeta.characterCount)
        #expect(reply.digest == Keystream.digest(ProbeName.characters(meta: meta, zone: zone, key: key)))
    }

    @Test func downloadLargerThanTheAskersBufferIsTruncated() throws {
        let meta = ProbeMeta.download(nonce: [1, 1, 1, 1, 1, 1, 1, 1], bytes: 1000, type: .txt)
        let name = try ProbeName.build(meta: meta, zone: zone, key: key)
        let small = responder.respond(to: try query(name, .txt, edns: 512))
        let r = try DNSMessage(parsing: #require(small.response))
        #expect(r.header.truncated && r.answers.isEmpty && small.disposition == .downloadTruncated)
        let noEDNS = try DNSMessage(parsing: #require(responder.respond(to: query(name, .txt, edns: nil)).response))
        #expect(noEDNS.header.truncated)
        let big = try DNSMessage(parsing: #require(responder.respond(to: query(name, .txt, edns: 4096)).response))
        #expect(!big.header.truncated)
        let payload = try DownloadLayout.extract(answers: big.answers, type: .txt, owner: name, zone: zone, expected: 1000)
        #expect(payload == DownloadLayout.payload(key: key, nonce: meta.nonce, count: 1000))
    }

    @Test func garbageNeverCrashesAndNeverAmplifies() throws {
        var rng = SplitMix64(seed: 42)
        let valid = try query(DNSName("abc.vpn.lab.test"))
        for i in 0..<50_000 {
            var bytes: [UInt8]
            if i % 2 == 0 {
                bytes = (0..<Int(rng.next() % 80)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            } else {
                bytes = valid
                for _ in 0..<(1 + Int(rng.next() % 4)) {
                    let at = Int(rng.next() % UInt64(bytes.count))
                    bytes[at] = UInt8(truncatingIfNeeded: rng.next())
                }
            }
            let out = responder.respond(to: bytes)
            if let response = out.response, out.disposition != .apex, out.disposition != .nameServer {
                #expect(response.count <= bytes.count, "response larger than query for \(bytes)")
            }
        }
    }
}
