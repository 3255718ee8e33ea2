import EngineModels
import DNSWire
import Foundation
import ProbeProtocol
import ProbeServer
@testable import ProbeClient
import Reports
import Testing
@testable import Results

@Suite struct SizeLimitTests {
    /// scan.json keeps today's strings ("tc", "servfail", ...) and reads values it does not know.
    @Test func encodesAsTodaysStringsAndReadsUnknownOnes() throws {
        let encoded = try JSONEncoder().encode([SizeLimit.resolverLimit, .upstreamEDNS, .servfail])
        #expect(String(decoding: encoded, as: UTF8.self) == #"["tc","upstreamEDNS","servfail"]"#)
        let decoded = try JSONDecoder().decode([SizeLimit].self, from: Data(#"["tc","somethingNew"]"#.utf8))
        #expect(decoded == [.resolverLimit, .unknown])
        for failure in ProbeFailure.allCases { #expect(failure.sizeLimit != .unknown, "\(failure)") }
    }

    /// The client predicts the responder's answer size byte for byte (same codec, same records),
    /// which is how an honouring responder's upstream limit is told without sending the probe.
    @Test(arguments: [DNSType.txt, .null, .aaaa]) func predictsTheResponderAnswerSize(type: DNSType) throws {
        let key = try ProbeKey(bytes: Array(0..<32))
        let zone = try DNSName("vpn.lab.test")
        let responder = ProbeResponder(configuration: .init(zone: zone, key: key))
        for bytes in [20, 700, 1000, 1185] {
            let nonce: [UInt8] = [1, 1, 2, 3, 5, 8, 13, 21]
            let meta = ProbeMeta.download(nonce: nonce, bytes: bytes, type: type, encoding: .base32,
                                          totalCharacters: 200)
            let name = try ProbeName.build(meta: meta, zone: zone, key: key)
            var header = DNSHeader(id: 7)
            header.recursionDesired = true
            let query = try DNSMessage(header: header, questions: [DNSQuestion(name: name, type: type)],
                                       edns: EDNS(udpPayloadSize: 65_000)).serialized()
            let real = try #require(responder.respond(to: query, source: [], transport: .tcp).response)
            #expect(Prober.responderAnswerSize(name: name, type: type, zone: zone, payload: bytes, key: key, nonce: nonce) == real.count)
        }
    }

    /// Loss with its Wilson interval; a pair above the threshold is left out of the exports and
    /// of the synced MTU, and the report says so.
    @Test func lossyPairsAreLeftOutOfTheExports() {
        func pair(_ resolver: String, lost: Int) -> ScanPair {
            var p = ScanPair(resolver: resolver, domain: "t.example", accepted: true,
                             upload: .init(bytes: 100, qnameChars: 200, payloadChars: 160, encoding: "base32", limitedBy: nil, caseChanged: false),
                             download: .init(bytes: resolver.hasPrefix("198.51.100.2") ? 400 : 900, responseSize: 1200,
                                             recordType: "TXT", limitedBy: .resolverLimit),
                             confirmation: .init(sent: 6, succeeded: 6 - lost))
            p.loss = ScanPair.loss(lost: lost, sent: 6)
            p.lossExceeded = (p.loss?.ratio ?? 0) > 0.2
            return p
        }
        let clean = pair("198.51.100.1:53", lost: 1)
        let lossy = pair("198.51.100.2:53", lost: 3)
        #expect(clean.usable && !lossy.usable)
        let interval = lossy.loss
        #expect(interval?.ratio == 0.5)
        #expect(abs((interval?.ciLow ?? 0) - 0.1876) < 0.001 && abs((interval?.ciHigh ?? 0) - 0.8124) < 0.001)
        let synced = SyncedMTU.synced([clean, lossy])
        #expect(synced.download == 900)
        let report = ScanReport(run: RunInfo(id: "r", version: "t", commandLine: [], vantage: "v", seed: 1, startedAt: "s",
                                             finishedAt: "f", complete: true, interruption: nil),
                                settings: .init(domains: ["t.example"], encoding: "base32", recordType: "TXT", timeoutMs: 1000,
                                                attempts: 2, concurrency: 1, perResolverQPS: 0, confirmProbes: 3, minValid: nil,
                                                uploadCharacters: .init(min: 48, max: 237), downloadBytes: .init(min: 20, max: 4096),
                                                frameOverhead: 0, ednsSize: 4096, maxLoss: 0.2),
                                input: .init(resolvers: 2, listIssues: []), pairs: [clean, lossy], synced: synced, optimized: nil,
                                summary: .init(pairs: 2, accepted: 2, rejected: 0, notTested: 0, rejectedBy: [:], queries: 0, durationSeconds: 1),
                                engines: EngineScan.all(Engine.allCases, pairs: [clean, lossy]))
        let files = Dictionary(uniqueKeysWithValues: report.engineExportFiles())
        #expect(files["exports/masterdnsvpn-go/client_resolvers.txt"]?.contains("\n198.51.100.1\n") == true)
        #expect(files["exports/masterdnsvpn-go/client_resolvers.txt"]?.contains("198.51.100.2") == false)
        #expect(files["exports/dnstt/dnstt-client.args"]?.contains("198.51.100.2") == false)
        #expect(report.engines?.allSatisfy { !$0.synced.usable.contains { $0.resolver == lossy.resolver } } == true)
        let markdown = report.markdown()
        #expect(markdown.contains("50.0 % (19–81 %, 3 of 6), above the threshold"))
        #expect(markdown.contains("1 pair(s) lost more than 20 %"))
        #expect(report.htmlSection().contains("1 pair(s) lost more than 20 %"))
    }
}
