import Fates
import Foundation
import Testing
import TraceAnalysis

/// `simulate --pcap`'s pipeline: a capture through the trace analysis to the fates it replays, and
/// the typed error of each capture that gives none.
struct CaptureFatesTests {
    static let tunnel = "t.example.com"
    static func name(_ i: Int) -> String { "aaaaaaaaaaaaaaaaaaaaaaaa\(i)bbbb.\(tunnel)" }

    @Test func aCaptureGivesItsRoundTripFatesWithTheTmaxAndDigestInTheSource() throws {
        var c = DNSCapture()
        c.query(at: 0, id: 1, name: Self.name(1))
        c.response(at: 10, id: 1, name: Self.name(1))
        c.query(at: 20, id: 2, name: Self.name(2))
        c.query(at: 30, id: 3, name: Self.name(3))
        c.response(at: 1500, id: 3, name: Self.name(3))  // beyond a 1 s Tmax: lost (RFC 7680)
        let path = try c.write()
        defer { unlink(path) }
        let trace = try FateTrace(capture: path, tmaxSeconds: 1, sha256: "abc")
        #expect(trace.source.kind == "trace" && trace.source.file == path && trace.source.sha256 == "abc")
        #expect(trace.source.description == "trace of \(path), Tmax 1.0 s")
        let stream = try #require(trace.streams.first)
        #expect(trace.streams.count == 1 && stream.direction == .roundTrip && stream.domain == Self.tunnel)
        #expect(stream.packets.map(\.delivered) == [true, false, false])
        // The same capture with a longer Tmax: the late answer counts.
        let patient = try FateTrace(capture: path, tmaxSeconds: 5, sha256: nil)
        #expect(patient.streams.first?.packets.map(\.delivered) == [true, false, true])
    }

    @Test func aMissingFileIsUnreadable() {
        #expect { try FateTrace(capture: "/nonexistent/tp.pcap", tmaxSeconds: 5, sha256: nil) } throws: { error in
            (error as? CaptureFatesError)?.code == .unreadable
        }
    }

    @Test func aCaptureWithoutDNSGivesNoQueries() throws {
        var c = DNSCapture()
        c.raw(at: 0, DNSCapture.ipv4UDP(source: "198.18.0.2", sport: 4000, destination: "198.18.0.1", dport: 4001, [1, 2, 3]))
        let path = try c.write()
        defer { unlink(path) }
        do {
            _ = try FateTrace(capture: path, tmaxSeconds: 5, sha256: nil)
            Issue.record("a capture without DNS gave fates")
        } catch {
            #expect(error.code == .noQueries && error.description == "\(path): no DNS queries in the capture, nothing to simulate")
        }
    }

    @Test func aCutRecordIsMalformedWithItsOffset() throws {
        var c = DNSCapture()
        c.query(at: 0, id: 1, name: Self.name(1))
        c.response(at: 10, id: 1, name: Self.name(1))
        let path = try c.write()
        defer { unlink(path) }
        let whole = try Data(contentsOf: URL(fileURLWithPath: path))
        try whole.dropLast(10).write(to: URL(fileURLWithPath: path))
        do {
            _ = try FateTrace(capture: path, tmaxSeconds: 5, sha256: nil)
            Issue.record("a cut capture gave fates")
        } catch {
            #expect(error.code == .malformed && error.description.hasPrefix("\(path): ") && error.description.contains("at byte offset"),
                    "\(error)")
        }
    }
}
