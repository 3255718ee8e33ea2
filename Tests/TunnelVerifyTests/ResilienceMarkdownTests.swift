import Foundation
import Reports
import Results
import Testing
import TestSupport
@testable import TunnelVerify

struct ResilienceMarkdownTests {
    static func sample() -> ResilienceReport {
        let run = RunInfo(id: "20261121-120000-resilience-0001", version: "0.1.0", commandLine: ["tunnelprobe", "resilience"],
                          vantage: "lab", seed: 7, startedAt: "2026-11-21T12:00:00Z", finishedAt: "2026-11-21T12:01:00Z")
        let leak = UplinkPacket(atMs: 1500, kind: .ipv4, family: 4, source: "198.19.3.138", destination: "198.18.2.2",
                                transport: "tcp", sourcePort: 40000, destinationPort: 80, length: 60)
        let nameLeak = UplinkPacket(atMs: 40, kind: .dns, family: 4, source: "198.19.3.138", destination: "198.18.0.1", transport: "udp",
                                    sourcePort: 5353, destinationPort: 53, query: "AAAA in.split.test.", length: 74, domain: "in.split.test")
        let probes: [ResilienceResult.Probe] = (0..<30).map { i in
            let at = i * 100
            let down = at >= 1000 && at < 2300
            return .init(atMs: at, ok: !down, latencyMs: down ? nil : 20, error: down ? "connect timed out" : nil)
        }
        return ResilienceReport(ResilienceResult(
            profile: "lab iodine", engine: "iodine", sandbox: "tpv-abc123",
            cycles: [.init(index: 1, ok: true, handshakeMs: 92, firstDataMs: 129, stopMs: 26),
                     .init(index: 2, ok: false, stopMs: 25, failure: "handshake: bad password")],
            leftovers: .init(processes: ["after cycle 2: 4242 sleep 120 "], tunDevices: [], routes: [], sockets: [], namespaces: []),
            scenarios: [
                .init(scenario: "uplink-down-1s", engine: "iodine", disruptionStartMs: 1000, disruptionEndMs: 2100, recoverySeconds: 0.22,
                      recoveryBoundSeconds: 30, recoveryNote: nil, requestsSent: 30, requestsLost: 13, reconnectAttempts: 0,
                      reconnectStorm: false, engineRestarted: nil, leaked: false, leakEvidence: [], probeLog: "probes-uplink-down-1s.csv",
                      probes: probes, notes: []),
                .init(scenario: "address-change", engine: "wireguard", disruptionStartMs: 1000, disruptionEndMs: 1050, recoverySeconds: nil,
                      recoveryBoundSeconds: 10, recoveryNote: "did not recover within 10 s", requestsSent: 110, requestsLost: 100,
                      reconnectAttempts: 40, reconnectStorm: true, engineRestarted: nil, leaked: true, leakEvidence: [leak],
                      probeLog: nil, probes: [], notes: ["uplink moved to 198.19.41.98 via 198.19.41.97"]),
                .init(scenario: "resolver-outage-1s", engine: "command", disruptionStartMs: 1000, disruptionEndMs: 2000, recoverySeconds: 0.4,
                      recoveryBoundSeconds: 10, recoveryNote: nil, requestsSent: 30, requestsLost: 9, reconnectAttempts: 0,
                      reconnectStorm: false, engineRestarted: nil, leaked: false, leakEvidence: [], probeLog: nil, probes: [],
                      failover: .init(blockedResolver: "198.18.0.1:53", failedOver: true, resolver: "198.18.4.1:53", afterMs: 312,
                                      queriesAfterStart: ["198.18.0.1:53": 4, "198.18.4.1:53": 21]), notes: []),
                .init(scenario: "resolver-outage-5s", engine: "iodine", disruptionStartMs: 1000, disruptionEndMs: 6000, recoverySeconds: nil,
                      recoveryBoundSeconds: 10, recoveryNote: "did not recover within 10 s", requestsSent: 150, requestsLost: 140,
                      reconnectAttempts: 0, reconnectStorm: false, engineRestarted: nil, leaked: false, leakEvidence: [], probeLog: nil,
                      probes: [], failoverNote: "iodine takes a single resolver on its command line", notes: []),
            ],
            split: .init(mode: "include", prefixes: ["198.18.2.0/24", "2001:db8:5::/48"],
                         domains: [.init(name: "in.split.test", side: "tunnel", server: "198.18.0.1", addresses: ["198.51.100.80", "2001:db8:5911::80"], note: nil),
                                   .init(name: "gone.split.test", side: "tunnel", server: "198.18.0.1", addresses: [], note: "198.18.0.1 answered with NXDOMAIN")],
                         tunnelledProbes: ["198.18.2.1", "2001:db8:5::1", "198.51.100.80", "2001:db8:5911::80"], directProbes: ["203.0.113.1", "2001:db8:ffff::1"],
                         clearOnUplink: [nameLeak], insideTunnel: [leak], unseenProbes: [],
                         notes: ["gone.split.test did not resolve (198.18.0.1 answered with NXDOMAIN): its traffic could not be checked"], ok: false),
            verdict: .fail, notes: ["resilience-outage not run: wireguard uses no resolver"]), run: run)
    }

    @Test func markdownMatchesTheGoldenFile() throws {
        let golden = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden/resilience.md")
        let rendered = Self.sample().markdown()
        #expect(rendered == (try Golden.expected(rendered, file: golden)))
    }

    /// The page opens with a summary and lists every note of the run, each named by where it came from.
    @Test func theHTMLSectionListsTheSummaryAndEveryNote() {
        let result = Self.sample().result
        let html = result.htmlSection()
        #expect(result.summaryLines.contains("uplink-down-1s: recovered in 0.22 s"))
        #expect(result.summaryLines.contains("address-change: did not recover within 10 s; leaked 1 packet"))
        #expect(result.summaryLines.contains("cycle 2: handshake: bad password"))
        let expected = result.notes + result.scenarios.flatMap { s in s.notes.map { "\(s.scenario): \($0)" } }
            + (result.split?.notes.map { "split: \($0)" } ?? [])
        #expect(expected.allSatisfy(result.allNotes.contains))
        #expect(result.allNotes.contains("resolver-outage-5s: failover not measured: iodine takes a single resolver on its command line"))
        for line in result.summaryLines + result.allNotes { #expect(html.contains("<li>\(HTML.escape(line))</li>"), "\(line)") }
    }

    @Test func jsonHasTheSchemaAndExplicitNulls() throws {
        let text = try ReportWriter.json(Self.sample())
        #expect(text.contains(#""schema" : "tunnelprobe.resilience/2""#))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        let scenarios = try #require(object["scenarios"] as? [[String: Any]])
        #expect(scenarios[1]["recoverySeconds"] is NSNull)
        #expect(scenarios[0]["recoverySeconds"] as? Double == 0.22)
        #expect(scenarios[0]["failover"] is NSNull && scenarios[0]["failoverNote"] is NSNull)
        #expect((scenarios[2]["failover"] as? [String: Any])?["afterMs"] as? Int == 312)
        let split = try #require(object["split"] as? [String: Any])
        #expect(((split["domains"] as? [[String: Any]])?[1])?["server"] as? String == "198.18.0.1")
        for key in ["scenario", "recoverySeconds", "requestsLost", "reconnectAttempts", "leaked"] { #expect(scenarios[0][key] != nil, "\(key)") }
        let decoded = try JSONDecoder().decode(ResilienceReport.self, from: Data(text.utf8))
        #expect(decoded == Self.sample())
    }

    @Test func htmlMarksTheDisruptionInTheChart() {
        let html = Self.sample().htmlSection()
        #expect(html.contains("resilience-0"))
        #expect(html.contains("failed over to 198.18.4.1:53 after 312 ms") && html.contains("Failover not measured: iodine takes"))
        #expect(html.contains("in.split.test") && html.contains("2001:db8:5911::80"))
        // Bins 1.0 to 2.0 s overlap the disruption (1000-2100 ms) and are drawn highlighted.
        let bins = ResilienceResult.bins(Self.sample().scenarios[0])
        #expect(bins.filter(\.highlighted).map(\.label) == ["1.0", "1.5", "2.0"])
        #expect(bins.map(\.value) == [5, 5, 0, 0, 2, 5])
    }

    /// `socks` is an explicit null for a run through the TUN; a SOCKS-shaped run names its proxy.
    @Test func aSOCKSShapedRunSaysWhereTheProbesWent() throws {
        var report = Self.sample()
        let object = try #require(try JSONSerialization.jsonObject(with: Data(try ReportWriter.json(report).utf8)) as? [String: Any])
        #expect(object["socks"] is NSNull)
        #expect(!report.markdown().contains("SOCKS"))
        report.socks = "127.0.0.1:18080"
        #expect(report.markdown().contains("SOCKS-shaped engine: first data and probes went through its SOCKS5 proxy `127.0.0.1:18080`."))
        #expect(report.htmlSection().contains("through its SOCKS5 proxy 127.0.0.1:18080"))
        let decoded = try JSONDecoder().decode(ResilienceReport.self, from: Data(try ReportWriter.json(report).utf8))
        #expect(decoded.socks == "127.0.0.1:18080" && decoded == report)
    }

    @Test func recoveryIsTheFirstAnswerSentAfterTheDisruption() {
        let probes: [ResilienceResult.Probe] = [
            .init(atMs: 900, ok: true, latencyMs: 10, error: nil),
            .init(atMs: 1000, ok: false, latencyMs: nil, error: "x"),
            .init(atMs: 2000, ok: true, latencyMs: 900, error: nil),
            .init(atMs: 2100, ok: true, latencyMs: 30, error: nil),
        ]
        // The probe sent at 2000 ms is before the end (2050 ms); the one at 2100 ms answered at 2130 ms.
        #expect(ProbeFlow.recovery(probes, disruptionEndMs: 2050) == 0.08)
        #expect(ProbeFlow.recovery(probes, disruptionEndMs: 2200) == nil)
    }

}
