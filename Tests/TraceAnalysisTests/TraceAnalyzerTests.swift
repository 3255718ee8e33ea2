import Capture
import Foundation
import Reports
import Testing
@testable import TraceAnalysis
@testable import Results

@Suite struct TraceAnalyzerTests {
    static let tunnel = "t.example.com"
    static func name(_ i: Int) -> String { "aaaaaaaaaaaaaaaaaaaaaaaa\(i)bbbb.\(tunnel)" }

    static let run = RunInfo(id: "test", version: "0", commandLine: [], vantage: "test", seed: 0, startedAt: "")

    func analyse(_ capture: DNSCapture, options: TraceOptions = TraceOptions()) throws -> (TraceAnalyzer, TraceReport) {
        let path = try capture.write()
        defer { unlink(path) }
        var analyzer = TraceAnalyzer(options: options)
        let file = try analyzer.read(path: path)
        analyzer.finish()
        return (analyzer, TraceReport(analyzer.result(files: [file]), run: Self.run))
    }

    @Test func answeredLostLateDuplicateAndRetransmitted() throws {
        var c = DNSCapture()
        c.query(at: 0, id: 1, name: Self.name(1))
        c.response(at: 10, id: 1, name: Self.name(1))              // answered, 10 ms
        c.response(at: 12, id: 1, name: Self.name(1))              // duplicate
        c.query(at: 20, id: 2, name: Self.name(2))                 // never answered
        c.query(at: 30, id: 3, name: Self.name(3))
        c.query(at: 1030, id: 3, name: Self.name(3))               // retransmission joins the first
        c.response(at: 1040, id: 3, name: Self.name(3))            // RTT from the first query: 1010 ms
        c.query(at: 2000, id: 4, name: Self.name(4))
        c.response(at: 8000, id: 4, name: Self.name(4))            // after Tmax 5 s: late
        c.response(at: 8100, id: 99, name: Self.name(99))          // no query: unmatched
        let (_, report) = try analyse(c)
        let r = try #require(report.resolvers.first)
        #expect(report.resolvers.count == 1)
        #expect(r.resolver == "198.18.0.1:53")
        #expect(r.queries == 4)
        #expect(r.retransmissions == 1)
        #expect(r.answered == 2)
        #expect(r.lost == 2)
        #expect(r.late == 1)
        #expect(r.neverAnswered == 1)
        #expect(r.duplicates == 1)
        #expect(r.unmatchedResponses == 1)
        #expect(r.rttMs.samples == 2)
        #expect(abs((r.rttMs.min ?? 0) - 10) < 0.02)
        #expect(abs((r.rttMs.max ?? 0) - 1010) < 1.1)
        #expect(report.packets.total == 10)
        #expect(report.packets.dns == 10)
        #expect(report.domains.first { $0.domain == Self.tunnel }?.kind == "txt-tunnel")
        #expect(r.groups?.count == 1)
        #expect(r.groups?.first?.domain == Self.tunnel)
        #expect(r.groups?.first?.recordType == "TXT")
    }

    @Test func reorderingFollowsRFC4737OnTheQueryOrder() throws {
        var c = DNSCapture()
        for i in 0..<5 { c.query(at: Double(i), id: i, name: Self.name(i)) }
        // Responses in the order 0 2 1 3 4: response 1 arrives after 2 -> one reordered (RFC 4737 4.1).
        for (k, i) in [0, 2, 1, 3, 4].enumerated() { c.response(at: 10 + Double(k), id: i, name: Self.name(i)) }
        let (_, report) = try analyse(c)
        #expect(report.totals.reordered == 1)
        #expect(report.totals.reorderedRatio == 0.2)
    }

    @Test func caseAndResolverAndPortKeepTransactionsApart() throws {
        var c = DNSCapture()
        c.query(at: 0, id: 7, name: "Www.Example.COM", type: 1)
        c.response(at: 5, id: 7, name: "www.example.com", type: 1)   // 0x20 case echoes still match
        c.query(at: 1, id: 7, name: "www.example.com", resolver: "198.18.0.9", type: 1)
        c.response(at: 6, id: 7, name: "www.example.com", resolver: "198.18.0.9", port: 40001, type: 1)  // wrong port: unmatched
        let (_, report) = try analyse(c)
        #expect(report.resolvers.count == 2)
        #expect(report.totals.answered == 1)
        #expect(report.totals.unmatchedResponses == 1)
        #expect(report.domains.first?.domain == "example.com")
        #expect(report.domains.first?.kind == "plain")
    }

    @Test func shortNamesUnderAKnownTunnelJoinIt() throws {
        var c = DNSCapture()
        c.query(at: 0, id: 1, name: Self.name(1), type: 10)
        c.query(at: 1, id: 2, name: "p1.\(Self.tunnel)", type: 10)
        let (_, report) = try analyse(c)
        #expect(report.domains.count == 1)
        #expect(report.domains.first?.queries == 2)
        #expect(report.domains.first?.kind == "iodine-like")
    }

    @Test func rcodesTruncationAndSizes() throws {
        var c = DNSCapture()
        c.query(at: 0, id: 1, name: Self.name(1))
        c.response(at: 1, id: 1, name: Self.name(1), rcode: 3, truncated: true)
        let (_, report) = try analyse(c)
        #expect(report.totals.rcodes == ["NXDOMAIN": 1])
        #expect(report.totals.truncated == 1)
        #expect(report.totals.querySizes.map(\.count).reduce(0, +) == 1)
        #expect(report.totals.responseSizes.first?.fromBytes == 96)
    }

    @Test func dnsOverTCPInOrderSegments() throws {
        var c = DNSCapture()
        let q = DNSCapture.message(id: 5, response: false, name: Self.name(5))
        let a = DNSCapture.message(id: 5, response: true, name: Self.name(5), answerBytes: 10)
        let framedQ = DNSCapture.be16(q.count) + q
        let framedA = DNSCapture.be16(a.count) + a
        c.raw(at: 0, DNSCapture.ipv4TCP(source: c.client, sport: 41000, destination: "198.18.0.1", dport: 53, seq: 100, flags: 0x02, []))
        // The query split over two segments, the answer in one.
        c.raw(at: 1, DNSCapture.ipv4TCP(source: c.client, sport: 41000, destination: "198.18.0.1", dport: 53, seq: 101, flags: 0x18,
                                        Array(framedQ[0..<10])))
        c.raw(at: 2, DNSCapture.ipv4TCP(source: c.client, sport: 41000, destination: "198.18.0.1", dport: 53, seq: 111, flags: 0x18,
                                        Array(framedQ[10...])))
        c.raw(at: 9, DNSCapture.ipv4TCP(source: "198.18.0.1", sport: 53, destination: c.client, dport: 41000, seq: 500, flags: 0x18, framedA))
        let (_, report) = try analyse(c)
        #expect(report.totals.queries == 1)
        #expect(report.totals.answered == 1)
        #expect(abs((report.totals.rttMs.p50 ?? 0) - 7) < 0.01)
    }

    @Test func aCaptureWithoutDNS() throws {
        var c = DNSCapture()
        c.raw(at: 0, DNSCapture.ipv4UDP(source: "198.18.0.2", sport: 5000, destination: "198.18.0.1", dport: 6000, [1, 2, 3]))
        c.raw(at: 1, DNSCapture.ipv4UDP(source: "198.18.0.2", sport: 5000, destination: "198.18.0.1", dport: 53, [1, 2, 3]))
        let (_, report) = try analyse(c)
        #expect(report.packets.total == 2)
        #expect(report.packets.notDNS == 1)
        #expect(report.packets.undecoded == ["dnsTruncatedHeader": 1])
        #expect(report.totals.queries == 0)
        #expect(report.resolvers.isEmpty)
        #expect(report.totals.rttMs.p50 == nil && report.totals.rttMs.reason != nil)
        #expect(report.markdown().contains("No DNS queries in the capture."))
    }

    @Test func fatesFollowTheFormat() throws {
        var c = DNSCapture()
        c.query(at: 0, id: 1, name: Self.name(1))
        c.response(at: 10, id: 1, name: Self.name(1))
        c.response(at: 11, id: 1, name: Self.name(1))
        c.query(at: 20, id: 2, name: Self.name(2))
        c.query(at: 30, id: 3, name: Self.name(3))
        c.response(at: 9000, id: 3, name: Self.name(3))  // late: lost in the fates (RFC 7680)
        var options = TraceOptions()
        options.recordFates = true
        let (analyzer, _) = try analyse(c, options: options)
        let trace = analyzer.fateTrace(source: .init(kind: "trace", description: "test"))
        try trace.validate()
        let packets = try #require(trace.streams.first?.packets)
        #expect(trace.streams.count == 1)
        #expect(trace.streams.first?.direction == .roundTrip)
        #expect(trace.streams.first?.domain == Self.tunnel)
        #expect(packets.map(\.delivered) == [true, false, false])
        #expect(packets.map(\.sentMs) == [0, 20, 30])
        #expect(packets[0].copies == 2)
        #expect(abs((packets[0].delayMs ?? 0) - 10) < 1e-9)
    }

    @Test func aLossInTheOverflowGroupCountsForItsOwnResolver() throws {
        var options = TraceOptions()
        options.maxGroups = 1  // the only group absorbs every resolver's traffic; 198.18.0.1 created it
        var c = DNSCapture()
        c.query(at: 0, id: 1, name: Self.name(1))
        c.response(at: 10, id: 1, name: Self.name(1))
        c.query(at: 20, id: 2, name: Self.name(2), resolver: "198.18.0.9")  // never answered
        let (_, report) = try analyse(c, options: options)
        let first = try #require(report.resolvers.first { $0.resolver == "198.18.0.1:53" })
        let second = try #require(report.resolvers.first { $0.resolver == "198.18.0.9:53" })
        #expect(first.lost == 0 && first.answered == 1)
        #expect(second.lost == 1 && second.queries == 1)
        #expect(report.totals.lost == 1)
    }

    @Test func memoryDoesNotGrowWithAnsweredQueries() throws {
        var analyzer = TraceAnalyzer()
        var peak = 0
        let q = DNSCapture.message(id: 0, response: false, name: Self.name(0))
        for i in 0..<50_000 {
            let t = Int64(i) * 1_000_000  // 1000 queries per second, each answered after 2 ms
            var query = q
            query[0] = UInt8((i >> 8) & 0xff); query[1] = UInt8(i & 0xff)
            var answer = query
            answer[2] = 0x81; answer[3] = 0x80
            let header = PacketHeader(timestampNanos: t, source: .v4(0xc612_0002), destination: .v4(0xc612_0001), transport: .udp,
                                      sourcePort: 40000, destinationPort: 53, ipLength: 0, wireLength: 0)
            query.withUnsafeBytes { analyzer.packet(header, $0) }
            var back = header
            back.timestampNanos = t + 2_000_000
            swap(&back.source, &back.destination)
            swap(&back.sourcePort, &back.destinationPort)
            answer.withUnsafeBytes { analyzer.packet(back, $0) }
            peak = max(peak, analyzer.openTransactions)
        }
        analyzer.finish()
        // Only the last Tmax (5 s x 1000/s) of answered transactions is kept for duplicate detection.
        #expect(peak <= 5_100)
        let report = TraceReport(analyzer.result(files: []), run: Self.run)
        #expect(report.totals.answered == 50_000)
    }
}
