import Capture
import Foundation
import Reports
import Testing
@testable import TraceAnalysis
@testable import Results

/// `read(path:)` goes through TracePipeline (libpcap, decoding and the front end on a second thread,
/// events in batches, each batch's index slots read ahead, domains found from precomputed suffix
/// hashes); feeding the same frames one by one to `packet(_:_:)` runs the front end and the matcher
/// on one thread and takes the full grouping path for every query. Both must give the same report.
@Suite struct TracePipelineTests {
    static let run = RunInfo(id: "test", version: "0", commandLine: [], vantage: "test", seed: 0, startedAt: "")

    /// Several batches' worth of traffic: two tunnels and plain names interleaved (domain cache misses
    /// and new domains), short names under a tunnel, five resolvers, answered, duplicated, lost, late
    /// and unmatched responses, and DNS messages that do not scan.
    static func capture() -> DNSCapture {
        var c = DNSCapture()
        let resolvers = ["198.18.0.1", "198.18.0.3", "198.18.0.4", "198.18.0.5", "198.18.0.6"]
        var rng: UInt64 = 7
        func next() -> UInt64 {
            rng = rng &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return rng >> 33
        }
        for i in 0..<6_000 {
            let t = Double(i) * 2
            let resolver = resolvers[i % resolvers.count]
            let name: String
            let type: Int
            switch i % 7 {
            case 0, 1, 2: name = "abcdefghijklmnopqrstuvwx\(i).t1.example.com"; type = 16
            case 3: name = "zyxwvutsrqponmlkjihgfedc\(i).tunnel.example.org"; type = 10
            case 4: name = "p\(i % 3).t1.example.com"; type = 16
            case 5: name = "www\(i % 50).site\(i % 11).example.net"; type = 1
            default: name = "Mixed\(i).Case.EXAMPLE.com"; type = 28
            }
            let id = i & 0xffff
            c.query(at: t, id: id, name: name, resolver: resolver, port: 40000 + i % 9, type: type)
            let fate = next() % 100
            if fate < 90 {
                let rtt = 1 + Double(next() % 400) / 10
                c.response(at: t + rtt, id: id, name: name.uppercased(), resolver: resolver, port: 40000 + i % 9, type: type,
                           rcode: fate < 2 ? 3 : 0, truncated: fate == 3)
                if fate < 5 {
                    c.response(at: t + rtt + 1, id: id, name: name, resolver: resolver, port: 40000 + i % 9, type: type)
                }
            } else if fate < 93 {
                c.response(at: t + 5_500, id: id, name: name, resolver: resolver, port: 40000 + i % 9, type: type)  // late
            } else if fate < 95 {
                c.response(at: t + 3, id: id ^ 0x5555, name: name, resolver: resolver, port: 40000 + i % 9, type: type)  // unmatched
            }
            if i % 500 == 0 {  // a DNS message whose question runs past its end
                c.raw(at: t, DNSCapture.ipv4UDP(source: c.client, sport: 40000, destination: resolver, dport: 53,
                                                [0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 40, 0x61]))
            }
        }
        c.frames.sort { $0.time < $1.time }
        return c
    }

    /// `disorder`: 400 records from two thirds of the way in moved to one third, so the window leaves lent
    /// mode there (TimeOrderWindow.push(lent:to:)), holding several of the pipeline's batches.
    func reports(options: TraceOptions, disorder: Bool = false) throws -> (piped: TraceReport, direct: TraceReport) {
        var c = Self.capture()
        if disorder {
            let third = c.frames.count / 3
            c.frames = Array(c.frames[0..<third] + c.frames[(2 * third)..<(2 * third + 400)] + c.frames[third..<(2 * third)]
                + c.frames[(2 * third + 400)...])
        }
        let path = try c.write()
        defer { unlink(path) }
        var piped = TraceAnalyzer(options: options)
        let file = try piped.read(path: path)
        piped.finish()

        var direct = TraceAnalyzer(options: options)
        var decoder = PacketDecoder(linkType: .raw)
        for frame in c.frames {
            _ = frame.bytes.withUnsafeBytes { bytes in
                decoder.decode(bytes, wireLength: bytes.count, timestampNanos: frame.time) { header, payload in
                    direct.packet(header, payload)
                }
            }
        }
        direct.finish()
        #expect(file.records == c.frames.count)
        return (TraceReport(piped.result(files: [file]), run: Self.run), TraceReport(direct.result(files: [file]), run: Self.run))
    }

    static func comparable(_ r: TraceReport) throws -> String {
        // The direct analyzer never saw the file's record count: compare everything after the packets.
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode([r.totals]), as: UTF8.self)
            + String(decoding: try encoder.encode(r.resolvers), as: UTF8.self)
            + String(decoding: try encoder.encode(r.domains), as: UTF8.self)
    }

    @Test(arguments: [false, true])
    func pipelineGivesTheSameReportAsPacketByPacket(disorder: Bool) throws {
        let (piped, direct) = try reports(options: TraceOptions(), disorder: disorder)
        #expect(piped.totals.queries == 6_000)
        #expect(piped.totals.late > 0)
        #expect(piped.totals.duplicates > 0)
        #expect(piped.resolvers.count == 5)
        #expect(piped.packets.dns == direct.packets.dns)
        #expect(piped.packets.undecoded == direct.packets.undecoded)
        #expect(piped.packets.undecoded["dnsMalformedQuestion"] == 12)
        #expect(try Self.comparable(piped) == Self.comparable(direct))
    }

    @Test func rttOfTheOverflowGroupStaysWithItsResolvers() throws {
        var options = TraceOptions()
        options.maxGroups = 4  // most groups fall into the last one, shared by every resolver
        let (piped, direct) = try reports(options: options)
        #expect(piped.resolvers.allSatisfy { $0.rttMs.samples > 0 })
        #expect(piped.resolvers.map(\.rttMs.samples).reduce(0, +) == piped.totals.answered)
        #expect(try Self.comparable(piped) == Self.comparable(direct))
    }
}
