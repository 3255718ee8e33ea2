import Foundation
import Reports
import Testing
@testable import TunnelVerify

struct ResilienceMarkdownTests {
    static func sample() -> ResilienceReport {
        let run = RunInfo(id: "20261121-120000-resilience-0001", version: "0.1.0", commandLine: ["tunnelprobe", "resilience"],
                          vantage: "lab", seed: 7, startedAt: "2026-11-21T12:00:00Z", finishedAt: "2026-11-21T12:01:00Z")
        let leak = UplinkPacket(atMs: 1500, kind: .ipv4, family: 4, source: "198.19.3.138", destination: "198.18.2.2",
                                transport: "tcp", sourcePort: 40000, destinationPort: 80, length: 60)
        let probes: [ResilienceReport.Probe] = (0..<30).map { i in
            let at = i * 100
            let down = at >= 1000 && at < 2300
            return .init(atMs: at, ok: !down, latencyMs: down ? nil : 20, error: down ? "connect timed out" : nil)
        }
        return ResilienceReport(
            run: run, profile: "lab iodine", engine: "iodine", sandbox: "tpv-abc123",
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
            ],
            split: .init(mode: "include", prefixes: ["198.18.2.0/24"], tunnelledProbes: ["198.18.2.1"], directProbes: ["203.0.113.1"],
                         clearOnUplink: [], insideTunnel: [leak], ok: false),
            verdict: "fail", notes: ["resilience-outage not run: wireguard uses no resolver"])
    }

    @Test func markdownMatchesTheGoldenFile() throws {
        let golden = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden/resilience.md")
        let rendered = Self.sample().markdown()
        if ProcessInfo.processInfo.environment["UPDATE_GOLDEN"] == "1" {
            try rendered.write(to: golden, atomically: true, encoding: .utf8)
        }
        #expect(rendered == (try String(contentsOf: golden, encoding: .utf8)))
    }

    @Test func jsonHasTheSchemaAndExplicitNulls() throws {
        let text = try ReportWriter.json(Self.sample())
        #expect(text.contains(#""schema" : "tunnelprobe.resilience/1""#))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        let scenarios = try #require(object["scenarios"] as? [[String: Any]])
        #expect(scenarios[1]["recoverySeconds"] is NSNull)
        #expect(scenarios[0]["recoverySeconds"] as? Double == 0.22)
        for key in ["scenario", "recoverySeconds", "requestsLost", "reconnectAttempts", "leaked"] { #expect(scenarios[0][key] != nil, "\(key)") }
        let decoded = try JSONDecoder().decode(ResilienceReport.self, from: Data(text.utf8))
        #expect(decoded == Self.sample())
    }

    @Test func htmlMarksTheDisruptionInTheChart() {
        let html = Self.sample().htmlSection()
        #expect(html.contains("resilience-0"))
        // Bins 1.0 to 2.0 s overlap the disruption (1000-2100 ms) and are drawn highlighted.
        let bins = ResilienceReport.bins(Self.sample().scenarios[0])
        #expect(bins.filter(\.highlighted).map(\.label) == ["1.0", "1.5", "2.0"])
        #expect(bins.map(\.value) == [5, 5, 0, 0, 2, 5])
    }

    @Test func recoveryIsTheFirstAnswerSentAfterTheDisruption() {
        let probes: [ResilienceReport.Probe] = [
            .init(atMs: 900, ok: true, latencyMs: 10, error: nil),
            .init(atMs: 1000, ok: false, latencyMs: nil, error: "x"),
            .init(atMs: 2000, ok: true, latencyMs: 900, error: nil),
            .init(atMs: 2100, ok: true, latencyMs: 30, error: nil),
        ]
        // The probe sent at 2000 ms is before the end (2050 ms); the one at 2100 ms answered at 2130 ms.
        #expect(ProbeFlow.recovery(probes, disruptionEndMs: 2050) == 0.08)
        #expect(ProbeFlow.recovery(probes, disruptionEndMs: 2200) == nil)
    }

    @Test func splitTargetsAndVerdict() throws {
        let split = Profile.Split(mode: .include, prefixes: ["198.18.2.0/24", "198.18.3.0/24"])
        let targets = SplitCheck.targets(split)
        #expect(targets.tunnelled == ["198.18.2.1", "198.18.3.1"] && targets.direct == ["203.0.113.1"])
        #expect(SplitCheck.isTunnelled(split, "198.18.3.200") && !SplitCheck.isTunnelled(split, "198.18.4.1"))
        let exclude = Profile.Split(mode: .exclude, prefixes: ["203.0.113.0/24"])
        #expect(SplitCheck.targets(exclude).direct == ["203.0.113.1"] && SplitCheck.targets(exclude).tunnelled == ["192.0.2.1"])
        func packet(_ destination: String) -> UplinkPacket {
            UplinkPacket(atMs: 1, kind: .ipv4, family: 4, source: "198.19.0.2", destination: destination, transport: "udp", length: 60)
        }
        let verdict = SplitCheck.judge(split: split, targets: targets, uplink: [packet("203.0.113.1"), packet("198.18.3.1")],
                                       tun: [packet("198.18.2.1"), packet("203.0.113.1")])
        #expect(!verdict.ok)
        #expect(verdict.clearOnUplink.map(\.destination) == ["198.18.3.1"])
        #expect(verdict.insideTunnel.map(\.destination) == ["203.0.113.1"])
    }

    @Test func profileSplitIsParsedAndCheckedField() throws {
        let base = #"{"version":1,"name":"x","protocol":"iodine","domain":"t.example","resolvers":[{"address":"192.0.2.1"}]"#
        let good = try Profile.parse(Array((base + #","split":{"exclude":["198.51.100.0/24"]}}"#).utf8))
        #expect(good.split == Profile.Split(mode: .exclude, prefixes: ["198.51.100.0/24"]))
        for (text, field) in [(#","split":{"include":["198.51.100.0/33"]}}"#, "split.include[0]"),
                              (#","split":{"include":["a"],"exclude":["b"]}}"#, "split"),
                              (#","split":{"include":[]}}"#, "split.include")] {
            #expect(throws: ProfileError.self) { try Profile.parse(Array((base + text).utf8)) }
            do { _ = try Profile.parse(Array((base + text).utf8)) } catch { #expect(error.description.contains(field), "\(error)") }
        }
    }
}
