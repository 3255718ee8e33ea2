import Foundation
import Reports
import Testing

/// `tunnelprobe trace` on files that are not good captures: each gives its documented result
/// (docs/TRACE.md, "Bad input"), never a crash. In process, through the binary's entry point.
struct TraceCommandTests {
    static func temporary(_ suffix: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("tp-tracecmd-\(UUID().uuidString)\(suffix)").path
    }

    /// A classic little-endian nanosecond pcap of RAW IPv4 frames: one DNS query and its response.
    static func capture() -> [UInt8] {
        func le32(_ v: UInt32) -> [UInt8] { [UInt8(v & 0xff), UInt8((v >> 8) & 0xff), UInt8((v >> 16) & 0xff), UInt8(v >> 24)] }
        func udp(_ src: [UInt8], _ dst: [UInt8], _ sport: Int, _ dport: Int, _ dns: [UInt8]) -> [UInt8] {
            let u = [UInt8(sport >> 8), UInt8(sport & 0xff), UInt8(dport >> 8), UInt8(dport & 0xff), 0, UInt8(8 + dns.count), 0, 0] + dns
            return [0x45, 0, 0, UInt8(20 + u.count), 0, 1, 0x40, 0, 64, 17, 0, 0] + src + dst + u
        }
        let question: [UInt8] = [0, 1, 0, 0, 0, 0, 0, 0, 1, 0x61, 4] + Array("test".utf8) + [0, 0, 1, 0, 1]
        let client: [UInt8] = [198, 18, 0, 2], resolver: [UInt8] = [198, 18, 0, 1]
        let frames = [udp(client, resolver, 40000, 53, [0x11, 0x22, 0x01, 0x00] + question),
                      udp(resolver, client, 53, 40000, [0x11, 0x22, 0x81, 0x80] + question)]
        var file = le32(0xa1b2_3c4d) + [2, 0, 4, 0] + le32(0) + le32(0) + le32(65535) + le32(101)
        for (i, f) in frames.enumerated() {
            file += le32(1_795_219_200) + le32(UInt32(i) * 3_000_000) + le32(UInt32(f.count)) + le32(UInt32(f.count)) + f
        }
        return file
    }

    func trace(_ bytes: [UInt8]) async throws -> (InProcess.Outcome, TraceReport?) {
        let file = Self.temporary(".pcap"), out = Self.temporary("-out")
        defer { unlink(file); try? FileManager.default.removeItem(atPath: out) }
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        let r = await InProcess.run(["trace", file, "--out", out, "--quiet"])
        let report = try? JSONDecoder().decode(TraceReport.self, from: Data(contentsOf: URL(fileURLWithPath: out + "/trace.json")))
        return (r, report)
    }

    @Test func aGoodCapture() async throws {
        let (r, report) = try await trace(Self.capture())
        #expect(r.status == 0, "\(r.stderr)")
        #expect(report?.run.complete == true)
        #expect(report?.totals.answered == 1)
        #expect(report?.totals.rttMs.p50 == 3)
    }

    /// trace renders its page and trace.md from the report in memory (`CommandRun.finish(written:)`);
    /// rendering the directory again from the JSON on disk, as every other run page is, gives the same
    /// bytes. A real engine capture (dnstt, docs/ENGINES.md): RTTs with fractions, several groups.
    @Test func thePageFromMemoryIsThePageFromTheJSON() async throws {
        let capture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("EngineModelsTests/Fixtures/dnstt-L1100-mtu1100.pcap").path
        let out = Self.temporary("-out")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let r = await InProcess.run(["trace", capture, "--out", out, "--quiet"])
        #expect(r.status == 0, "\(r.stderr)")
        func read(_ name: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: out + "/" + name)) }
        let fromMemory = try ["index.html", "trace.md", "summary.json"].map(read)
        #expect(ReportWriter.renderRun(directory: out, indexRoot: nil).isEmpty)
        let fromDisk = try ["index.html", "trace.md", "summary.json"].map(read)
        #expect(fromMemory == fromDisk)
        #expect(String(decoding: fromMemory[1], as: UTF8.self).contains("RTT"))
    }

    @Test func aCutCaptureIsAnalysedUpToTheCut() async throws {
        let (r, report) = try await trace(Array(Self.capture().dropLast(5)))
        #expect(r.status == 66)
        #expect(r.stderr.split(separator: "\n").count == 1 && r.stderr.contains("byte offset"), "\(r.stderr)")
        #expect(report?.run.complete == false)
        #expect(report?.packets.total == 1)
        #expect(report?.totals.queries == 1 && report?.totals.lost == 1)
    }

    @Test func emptyNotACaptureAndGarbage() async throws {
        for (bytes, words) in [([UInt8](), "empty file"), (Array("GET / HTTP/1.1\r\n".utf8), "not a pcap or pcapng"),
                               ([0x0a, 0x0d, 0x0d, 0x0a, 1, 2], ".pcap: ")] {
            let (r, report) = try await trace(bytes)
            #expect(r.status == 66, "\(r.stderr)")
            #expect(r.stderr.hasPrefix("tunnelprobe: error: ") && r.stderr.contains(words), "\(r.stderr)")
            #expect(report == nil)
        }
    }

    @Test func aCaptureWithoutDNS() async throws {
        var bytes = Self.capture()
        // Move both datagrams off port 53 (the ports sit at fixed offsets in the two records).
        for offset in [24 + 16 + 22, 24 + 16 + 52 + 16 + 20] { bytes[offset] = 0x13 }
        let (r, report) = try await trace(bytes)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(report?.packets.notDNS == 2)
        #expect(report?.totals.queries == 0)
        #expect(r.stdout.isEmpty)
    }
}
