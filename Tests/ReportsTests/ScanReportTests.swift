import EngineModels
import ProbeClient
import Foundation
import Reports
import Testing
import TestSupport
import Results

@Suite struct ScanReportTests {
    static func sample(complete: Bool = true) -> ScanReport {
        var pairs = [
            ScanPair(resolver: "198.51.100.7:53", domain: "vpn.lab.test", accepted: true,
                     upload: .init(bytes: 148, qnameChars: 253, payloadChars: 237, encoding: "base32", limitedBy: nil, caseChanged: false),
                     download: .init(bytes: 900, responseSize: 1232, recordType: "TXT", limitedBy: .resolverLimit),
                     rttMs: 1.5, confirmation: .init(sent: 6, succeeded: 6), queries: 20),
            ScanPair(resolver: "203.0.113.9:53", domain: "vpn.lab.test", accepted: false, stage: .reachability,
                     reason: "reachability: timeout", failure: .timeout, queries: 2),
        ]
        pairs[0].download?.limitingLeg = .clientLeg
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
                           queries: 22, durationSeconds: 1.25),
            engines: EngineScan.all(Engine.allCases, pairs: pairs))
    }

    /// Issue 29: each accepted pair's row names its transport and the leg that bound its download
    /// size, in scan.md and in the HTML page.
    @Test func rowsNameTheTransportAndTheLimitingLeg() throws {
        var report = Self.sample()
        var dot = report.pairs[0]
        dot.resolver = "tls://198.51.100.8:853#dns.lab.test"
        dot.transport = .tls
        dot.download = .init(bytes: 1400, responseSize: 1490, recordType: "TXT", limitedBy: .upstreamEDNS, upstreamEDNS: 1500)
        dot.download?.limitingLeg = .resolverToServer
        report.pairs.append(dot)
        let markdown = report.markdown()
        #expect(markdown.contains("| resolver | transport | domain |"))
        #expect(markdown.contains("| tls://198.51.100.8:853#dns.lab.test | tls | vpn.lab.test | 148 | 253 | 1400 | 1490 | upstream EDNS 1500 | resolverToServer |"))
        #expect(markdown.contains("| 198.51.100.7:53 | udp | vpn.lab.test | 148 | 253 | 900 | 1232 | TC | clientLeg |"))
        let html = report.htmlSection()
        #expect(html.contains("<th>transport</th>") || html.contains(">transport<"))
        #expect(html.contains("resolverToServer"))
        #expect(html.contains("clientLeg"))
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

    /// Each engine's files land under exports/<engine>/, in the engine's own units: MasterDnsVPN's
    /// four keys pinned (MIN = MAX) and its resolver list, dnstt's server -mtu.
    @Test func engineExports() throws {
        let files = Dictionary(uniqueKeysWithValues: Self.sample().engineExportFiles())
        let config = try #require(files["exports/masterdnsvpn-go/client_config.toml"])
        let mdv = try #require(Self.sample().engines?.first { $0.engine == .masterDnsVPNGo })
        let up = try #require(mdv.synced.upload), down = try #require(mdv.synced.download)
        #expect(config.contains("MIN_UPLOAD_MTU = \(up)\nMAX_UPLOAD_MTU = \(up)\nMIN_DOWNLOAD_MTU = \(down)\nMAX_DOWNLOAD_MTU = \(down)\n"))
        #expect(up == 139, "MasterDnsVPN Go under a 12-character domain with a 253-character name")
        #expect(files["exports/masterdnsvpn-go/client_resolvers.txt"]?.hasSuffix("\n198.51.100.7\n") == true)
        #expect(files["exports/masterdnsvpn-go/client_resolvers.txt"]?.contains("203.0.113.9") == false)
        #expect(files["exports/masterdnsvpn-python/client_config.toml"] != nil)
        #expect(files["exports/dnstt/dnstt-server.args"]?.contains("-mtu 1232") == true)
        #expect(files["exports/slipstream/slipstream-client.args"]?.contains("--resolver 198.51.100.7:53") == true)
        #expect(files["exports/iodine/iodine.args"] != nil)
        let md = Self.sample().markdown()
        #expect(md.contains("## Numbers for your engine") && md.contains("`MIN_DOWNLOAD_MTU / MAX_DOWNLOAD_MTU`"))
    }

    /// A merge recomputes every engine's figures over the pairs of all its inputs.
    @Test func mergeRecomputesEngineFigures() throws {
        var small = Self.sample()
        small.run.vantage = "second"
        small.pairs[0].resolver = "192.0.2.8:53"
        small.pairs[0].download?.responseSize = 900
        small.engines = EngineScan.all([.masterDnsVPNGo], pairs: small.pairs)
        let merged = try ScanReport.merged([Self.sample(), small], run: Self.sample().run)
        let mdv = try #require(merged.engines?.first { $0.engine == .masterDnsVPNGo })
        #expect(mdv.synced.usable.count == 2)
        let alone = try #require(small.engines?.first?.synced.download)
        #expect(mdv.synced.download == alone)
        #expect(merged.engines?.map(\.engine) == Engine.allCases)
    }
}
