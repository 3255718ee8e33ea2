import Capture
import Foundation
import Reports
import Testing
import TestSupport
@testable import TraceAnalysis

/// `trace` on the captures of the issue "Nothing left behind, no crash": every one yields a report
/// whose figures were measured, never a crash or a false loss.
@Suite struct HostileTraceTests {
    static func name(_ i: Int) -> String { "aaaaaaaaaaaaaaaaaaaaaaaa\(i)bbbb.t.example.com" }

    static func temporary(_ suffix: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("tp-hostile-\(UUID().uuidString).\(suffix)").path
    }

    static func analyse(path: String, options: TraceOptions = TraceOptions()) throws -> (TraceAnalyzer, TraceReport) {
        var analyzer = TraceAnalyzer(options: options)
        let file = try analyzer.read(path: path)
        analyzer.finish()
        return (analyzer, TraceReport(analyzer.result(files: [file]), run: TraceAnalyzerTests.run))
    }

    /// `tcpdump -s 128`: every answer cut after its question. Before, each was counted only as
    /// `undecoded.snapTruncated` and its query as lost (100% loss, exit 0).
    @Test func snapCutAnswersAreAnsweredAndTheSummaryWarns() throws {
        var c = DNSCapture()
        for i in 0..<50 {
            c.query(at: Double(i) * 10, id: i, name: Self.name(i))
            c.raw(at: Double(i) * 10 + 3, DNSCapture.ipv4UDP(
                source: "198.18.0.1", sport: 53, destination: c.client, dport: 40000,
                DNSCapture.message(id: i, response: true, name: Self.name(i), answerBytes: 400)))
        }
        let path = Self.temporary("pcap")
        defer { unlink(path) }
        let writer = try PcapWriter(path: path, linkType: .raw, snapLength: 128)
        for f in c.frames { writer.write(Array(f.bytes.prefix(128)), timestampNanos: f.time, wireLength: f.bytes.count) }
        writer.close()
        let (_, report) = try Self.analyse(path: path)
        #expect(report.totals.queries == 50)
        #expect(report.totals.answered == 50)
        #expect(report.totals.lost == 0)
        #expect(report.totals.snapTruncated == 50)
        #expect(report.resolvers.first?.snapTruncated == 50)
        // Sizes are the ones on the wire, not the 100 bytes captured.
        #expect(report.totals.responseSizes.allSatisfy { $0.fromBytes >= 448 })
        let summary = report.summaryLine(directory: "/tmp/x")
        #expect(summary.contains("50 answered, 0 lost"))
        #expect(summary.contains("warning: truncated capture: 50 responses cut by the snap length"))
        #expect(report.markdown().contains("**Truncated capture:**"))
    }

    /// Records out of time order by more than Tmax: a response read 20 s after its query's clock had
    /// passed was a false loss (and the response unmatched). Within the 10 s window of TimeOrderWindow
    /// (plus Tmax of tolerance in the matcher) the events are put back in order.
    @Test func recordsOutOfOrderByMoreThanTmaxAreSortedBack() throws {
        var c = DNSCapture()
        c.query(at: 0, id: 1, name: Self.name(1))
        c.query(at: 8_000, id: 2, name: Self.name(2))      // 8 s later, written first by another buffer
        c.response(at: 8_010, id: 2, name: Self.name(2))
        c.response(at: 12, id: 1, name: Self.name(1))       // read 8 s after Tmax had expired query 1
        c.query(at: 9_000, id: 3, name: Self.name(3))
        c.response(at: 9_005, id: 3, name: Self.name(3))
        let path = try c.write()
        defer { unlink(path) }
        let (analyzer, report) = try Self.analyse(path: path)
        #expect(report.totals.answered == 3)
        #expect(report.totals.lost == 0)
        #expect(report.totals.unmatchedResponses == 0)
        #expect(report.totals.rttMs.min == 5)
        #expect(analyzer.eventsReordered == 1)
        // The bound is the window: without it, the same capture loses query 1.
        var unsorted = TraceOptions()
        unsorted.timeOrderWindowNanos = 0
        let (_, before) = try Self.analyse(path: path, options: unsorted)
        #expect(before.totals.lost == 1)
        #expect(before.totals.unmatchedResponses == 0 && before.totals.late == 1)
    }

    @Test func anEventStaysOneCacheLine() {
        #expect(MemoryLayout<TraceEvent>.stride == 64)
    }

    @Test func theWindowHoldsAtMostItsEventCount() throws {
        var c = DNSCapture()
        for i in 0..<100 {
            c.query(at: Double(i), id: i, name: Self.name(i))
            c.response(at: Double(i) + 0.5, id: i, name: Self.name(i))
        }
        let path = try c.write()
        defer { unlink(path) }
        var small = TraceOptions()
        small.timeOrderMaxEvents = 8
        let (_, report) = try Self.analyse(path: path, options: small)
        #expect(report.totals.answered == 100)
    }

    /// The last instant Int64 nanoseconds hold (2262-04-11) plus Tmax must not trap in the matcher.
    @Test func aQueryAtTheLastRepresentableInstantIsLostNotACrash() throws {
        var b = PcapngBuilder()
        b.section(bigEndian: false)
        b.interface(linkType: 101, resolution: 9)
        let query = DNSCapture.ipv4UDP(source: "198.18.0.2", sport: 40000, destination: "198.18.0.1", dport: 53,
                                       DNSCapture.message(id: 1, response: false, name: Self.name(1)))
        b.packet(interface: 0, ticks: UInt64(Int64.max) - 1, query)
        let path = Self.temporary("pcapng")
        defer { unlink(path) }
        _ = FileManager.default.createFile(atPath: path, contents: Data(b.bytes))
        let (_, report) = try Self.analyse(path: path)
        #expect(report.totals.queries == 1 && report.totals.lost == 1)
    }

    /// A Wireshark capture on eth0 and a PPPoE uplink and a tun device in one pcapng, the second section
    /// big-endian: every query is matched with its answer whatever interface carried it.
    @Test func mixedInterfacesAndSectionsAreOneCapture() throws {
        func eth(_ ip: [UInt8]) -> [UInt8] { [2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00] + ip }
        func pppoe(_ ip: [UInt8]) -> [UInt8] {
            [2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x88, 0x64, 0x11, 0, 0, 7] + DNSCapture.be16(ip.count + 2) + [0, 0x21] + ip
        }
        func query(_ i: Int) -> [UInt8] {
            DNSCapture.ipv4UDP(source: "198.18.0.2", sport: 40000, destination: "198.18.0.1", dport: 53,
                               DNSCapture.message(id: i, response: false, name: Self.name(i)))
        }
        func answer(_ i: Int) -> [UInt8] {
            DNSCapture.ipv4UDP(source: "198.18.0.1", sport: 53, destination: "198.18.0.2", dport: 40000,
                               DNSCapture.message(id: i, response: true, name: Self.name(i), answerBytes: 40))
        }
        let t: UInt64 = 1_795_219_200_000_000
        var b = PcapngBuilder()
        b.section(bigEndian: false)
        b.interface(linkType: 1)    // eth0
        b.interface(linkType: 101)  // tun0
        b.packet(interface: 0, ticks: t, eth(query(1)))
        b.packet(interface: 1, ticks: t + 10_000, answer(1))
        b.section(bigEndian: true)
        b.interface(linkType: 1)    // the PPPoE uplink
        b.packet(interface: 0, ticks: t + 20_000, pppoe(query(2)))
        b.packet(interface: 0, ticks: t + 30_000, pppoe(answer(2)))
        let path = Self.temporary("pcapng")
        defer { unlink(path) }
        _ = FileManager.default.createFile(atPath: path, contents: Data(b.bytes))
        let (_, report) = try Self.analyse(path: path)
        #expect(report.files.first?.error == nil)
        #expect(report.files.first?.linkType == "ETHERNET+RAW")
        #expect(report.totals.queries == 2 && report.totals.answered == 2)
        #expect(report.totals.rttMs.p50 == 10)
    }
}
