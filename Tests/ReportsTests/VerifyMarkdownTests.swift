import Foundation
import Reports
import Results
import Testing
import TunnelVerify
import TestSupport

struct VerifyMarkdownTests {
    static func sample() -> VerifyReport {
        let run = RunInfo(id: "20261121-120000-verify-0001", version: "0.1.0", commandLine: ["tunnelprobe", "verify"],
                          vantage: "lab", seed: 7, startedAt: "2026-11-21T12:00:00Z", finishedAt: "2026-11-21T12:00:10Z")
        let leak = UplinkPacket(atMs: 9281, kind: .dns, family: 4, source: "198.19.3.138", destination: "198.18.0.1",
                                transport: "udp", sourcePort: 38596, destinationPort: 53,
                                query: "A bh6lzafviwb6aki3.leak.tunnelprobe.invalid", length: 101)
        return VerifyReport(VerifyResult(
            profile: "lab iodine", engine: "iodine", engineCommand: ["iodine", "-P", "********"], sandbox: "tpv-abc123",
            phases: [
                .init(name: "engine", startedMs: 80, durationMs: 20, ok: true, detail: "pid 100"),
                .init(name: "tun", startedMs: 100, durationMs: 60, ok: true, detail: "tpv-abc123-t 198.18.8.2/24"),
                .init(name: "routes", startedMs: 160, durationMs: 10, ok: true, detail: "default via tpv-abc123-t (IPv4 and IPv6); excluded 198.18.0.1"),
                .init(name: "handshake", startedMs: 170, durationMs: 9000, ok: true, detail: "Connection setup complete, transmitting data."),
                .init(name: "data", startedMs: 9170, durationMs: 30, ok: true, detail: "GET http://198.18.2.2:80/ through tpv-abc123-t: 198.18.2.1"),
                .init(name: "checks", startedMs: 9200, durationMs: 600, ok: false),
            ],
            failure: nil,
            handshake: .init(ok: true, evidence: "Connection setup complete, transmitting data.", timeMs: 9170),
            exitIP: .init(url: "http://198.18.2.2:80/", observed: "198.18.2.1", expected: "198.18.2.1", ok: true),
            dnsLeak: .init(requested: true, leaked: true, servers: ["198.18.0.1"], names: ["a", "b", "c"], answered: 3,
                           evidence: [leak], resolversSeen: ["198.18.1.1"], unexpectedResolvers: ["198.18.1.1"]),
            ipv6Leak: .init(requested: true, leaked: false, evidence: []),
            tunnelFailure: .init(requested: true, leaked: false, evidence: []),
            capture: .init(interface: "tpv-abc123-u", file: "reports/x/uplink.pcap", packets: 45, carrier: 36, linkControl: 8, nonCarrier: [leak]),
            diagnostics: .init(phase: "checks", selectedResolver: "198.18.0.1", session: "user #0", tunAddress: "198.18.8.2/24",
                               tunPacketsUp: 12, tunPacketsDown: 9, routeLoops: [], errors: []),
            timing: .init(startToVerdictMs: 9800, handshakeMs: 9170, afterHandshakeMs: 630),
            verdict: .fail, reason: "DNS leak: 1 query outside the tunnel (A bh6lzafviwb6aki3.leak.tunnelprobe.invalid)"), run: run)
    }

    @Test func markdownMatchesTheGoldenFile() throws {
        let golden = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden/verify.md")
        let rendered = Self.sample().markdown()
        #expect(rendered == (try Golden.expected(rendered, file: golden)))
    }

    @Test func jsonCarriesTheSchemaAndNullsForWhatWasNotMeasured() throws {
        var report = Self.sample()
        report.ipv6Leak = .init(requested: true, leaked: nil, evidence: [], note: "not measured: no uplink capture")
        let text = try ReportWriter.json(report)
        #expect(text.contains(#""schema" : "tunnelprobe.verify/1""#))
        let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        let ipv6 = object?["ipv6Leak"] as? [String: Any]
        #expect(ipv6?["leaked"] is NSNull)
    }

    /// MasterDnsVPN's diagnostics, as the seed lists them, on the page, in verify.md and in verify.json:
    /// what the client does not expose is null with its reason.
    @Test func engineDiagnosticsAreShownWithTheirNulls() throws {
        var report = Self.sample()
        let log = """
            2026/11/25 17:56:48 [MasterDnsVPN Client] [INFO] ✅ Accepted (1/1): m.lab.test via 198.18.0.1:53 | upload=113 | download=500 | totals: valid=1, rejected=0
            2026/11/25 17:56:48 [MasterDnsVPN Client] [INFO] Session init attempt with m.lab.test and resolver 198.18.0.1
            2026/11/25 17:56:48 [MasterDnsVPN Client] [INFO] ✅ Session Initialized Successfully (ID: 7)
            """
        report.diagnostics.engine = EngineDiagnostics.masterDnsVPN(log: log, carrier: (up: 48, down: 0), fec: FECPreset.normalized("aggressive"))
        let markdown = report.markdown()
        #expect(markdown.contains("## Engine diagnostics (iodine)"))
        #expect(markdown.contains("- session id: 7") && markdown.contains("- accepted resolvers: 1") && markdown.contains("- packets up: 48"))
        #expect(markdown.contains("- ARQ NACKs: null (the MasterDnsVPN Go edition's client logs no ARQ counter"))
        #expect(markdown.contains("- FEC requested: aggressive (group 16, overhead 40%, flush 15 ms)"))
        let html = report.htmlSection()
        #expect(html.contains("<h3 id=\"verify-engine\">Engine diagnostics</h3>") && html.contains("<dt>FEC recovered packets</dt><dd><span class=\"badge neutral\">null</span>"))
        let object = try JSONSerialization.jsonObject(with: Data(try ReportWriter.json(report).utf8)) as? [String: Any]
        let engine = (object?["diagnostics"] as? [String: Any])?["engine"] as? [String: Any]
        #expect(engine?["sessionID"] as? String == "7")
        #expect(engine?["fecRecoveredPackets"] is NSNull)
        #expect((engine?["unavailable"] as? [String: String])?["fecNegotiated"]?.contains("no FEC") == true)
    }
}
