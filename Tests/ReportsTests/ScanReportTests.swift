import ProbeClient
import Foundation
import Reports
import Testing
import TestSupport

@Suite struct ScanReportTests {
    static func sample(complete: Bool = true) -> ScanReport {
        let pairs = [
            ScanPair(resolver: "198.51.100.7:53", domain: "vpn.lab.test", accepted: true,
                     upload: .init(bytes: 148, qnameChars: 253, payloadChars: 237, encoding: "base32", limitedBy: nil, caseChanged: false),
                     download: .init(bytes: 900, responseSize: 1232, recordType: "TXT", limitedBy: .resolverLimit),
                     rttMs: 1.5, confirmation: .init(sent: 6, succeeded: 6), queries: 20),
            ScanPair(resolver: "203.0.113.9:53", domain: "vpn.lab.test", accepted: false, stage: .reachability,
                     reason: "reachability: timeout", failure: .timeout, queries: 2),
        ]
        return ScanReport(
            run: RunInfo(id: "20261121-000000-scan-1", version: "0.1.0", commandLine: ["tunnelprobe", "scan"],
                         vantage: "lab", seed: 1, startedAt: "2026-11-21T00:00:00Z", complete: complete,
                         interruption: complete ? nil : "SIGINT"),
            settings: .init(domains: ["vpn.lab.test"], encoding: "base32", recordType: "TXT", timeoutMs: 2000, attempts: 2,
                            concurrency: 256, perResolverQPS: 100, confirmProbes: 3, minValid: nil,
                            uploadCharacters: .init(min: 48, max: 253), downloadBytes: .init(min: 20, max: 4096),
                            frameOverhead: 0, ednsSize: 4096),
            input: .init(resolvers: 2, listIssues: ["list.txt:3: not an IP address: x"]),
            pairs: pairs,
            synced: .init(upload: 148, download: 900, uploadQnameChars: 253, downloadResponseSize: 1232),
            optimized: nil,
            summary: .init(pairs: 2, accepted: 1, rejected: 1, notTested: 0, rejectedBy: ["reachability: timeout": 1],
                           queries: 22, durationSeconds: 1.25))
    }

    @Test func jsonHasTheDocumentedKeysAndRoundTrips() throws {
        let report = Self.sample()
        let text = try ReportWriter.json(report)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(object["schema"] as? String == "tunnelprobe.scan/1")
        let pair = try #require((object["pairs"] as? [[String: Any]])?.first)
        #expect((pair["upload"] as? [String: Any])?["qnameChars"] as? Int == 253)
        #expect((pair["download"] as? [String: Any])?["responseSize"] as? Int == 1232)
        #expect((object["synced"] as? [String: Any])?["download"] as? Int == 900)
        #expect(try JSONDecoder().decode(ScanReport.self, from: Data(text.utf8)) == report)
    }

    @Test func markdownMatchesTheGoldenFile() throws {
        let golden = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden/scan.md")
        let rendered = Self.sample().markdown()
        #expect(rendered == (try Golden.expected(rendered, file: golden)))
    }

    @Test func incompleteRunsSaySo() {
        #expect(Self.sample(complete: false).markdown().contains("**Incomplete run** (SIGINT)"))
    }

    @Test func engineExports() {
        let r = Self.sample()
        #expect(r.masterDnsVPNSuccessLines() == "198.51.100.7:53 (vpn.lab.test) - UP: 148 DOWN: 900\n")
        #expect(r.masterDnsVPNResolverList() == "198.51.100.7:53\n")
        #expect(r.iodineFlags().hasSuffix("-m 900 -M 253 -T TXT\n"))
    }
}
