import Base
import Foundation
@testable import Lab
import ProbeClient
import Results
import Reports
import Testing
import TestSupport

/// Issue 29: `rank` and `path` over UDP, TCP, DoT and DoH through the lab's unbound (DoT/DoH with
/// the lab's CA, as in `TransportLabTests`): a sustainable rate and RTTs per transport, the
/// transport named per pair; over the stream transports the first query (connection set-up) and
/// the connections set up are reported, and path gives no per-direction loss there.
/// The lab with a CA (openssl).
let transportRateLabGate = LabGate(tools: [("ip", "iproute2"), ("unbound", "unbound"), ("openssl", "openssl")], binary: true)

@Suite(.serialized, .enabled(if: transportRateLabGate.runs, "lab needs root, unbound, openssl and a built binary"))
struct TransportRateLabTests {
    @Test(.timeLimit(.minutes(2)))
    func rankAndPathGiveARateAndRTTPerTransport() async throws {
        try transportRateLabGate.check()
        try await withLab(config: LabConfig(name: scanLabName(), serverCommand: serveCommand(["--edns", "honor"]),
                                            resolverTLS: true, resolverIPv6: true)) { lab in
            let ca = LabCertificates.caPath(lab.stateDirectory)
            let name = LabCertificates.resolverName
            let v4 = lab.resolverAddress
            let resolvers = [v4, "tcp://\(Lab.aliasProbeAddress)", "tls://\(v4)#\(name)", "https://\(v4)/dns-query#\(name)"]
            let out = FileManager.default.temporaryDirectory.appendingPathComponent("tp-rank29-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: out) }
            func tunnelprobe(_ argv: [String]) throws -> Run {
                try run(Lab.namespaceCommand(name: lab.name, role: .client, command: [TestEnvironment.binary] + argv))
            }
            let s = try tunnelprobe(["scan", "--domain", lab.domain, "--key-file", lab.keyFile, "--out", out + "/scan", "--quiet",
                                     "--seed", "1", "--timeout", "1", "--tls-ca", ca] + resolvers.flatMap { ["--resolver", $0] })
            #expect(s.status == 0, "scan: \(s.stderr)")

            // rank: a short knee search (20 q/s x 1.5 per 1 s step, ceiling 60), every pair over its transport.
            let r = try tunnelprobe(["rank", "--scan", out + "/scan", "--key-file", lab.keyFile, "--out", out + "/rank", "--quiet",
                                     "--seed", "2", "--start-rate", "20", "--step-seconds", "1", "--pause-seconds", "0.2",
                                     "--timeout", "1", "--ceiling", "60", "--refine-steps", "0", "--parallel", "4", "--tls-ca", ca])
            #expect(r.status == 0, "rank: \(r.stderr)")
            let rank = try JSONDecoder().decode(RankReport.self, from: Data(contentsOf: URL(fileURLWithPath: out + "/rank/rank.json")))
            #expect(Set(rank.pairs.compactMap(\.transport)) == [.udp, .tcp, .tls, .https], "\(rank.pairs.map(\.resolver))")
            for p in rank.pairs {
                let transport = try #require(p.transport)
                print("transport-rate-lab: rank \(p.resolver) \(transport): \(p.sustainableRate) q/s (\(p.limitedBy.rawValue)), RTT p50 \(p.rttAtSustainableMs?.p50 ?? -1) ms, first query \(p.firstQueryMs ?? -1) ms, connections \(p.connections?.opened ?? 0)/\(p.connections?.failed ?? 0)")
                #expect(p.sustainableRate >= 20, "\(p.resolver): \(p.evidence)")
                #expect(p.rttAtSustainableMs != nil, "\(p.resolver)")
                if transport.isStream {
                    #expect(p.firstQueryMs != nil, "\(p.resolver)")
                    #expect((p.connections?.opened ?? 0) >= 1 && p.connections?.failed == 0, "\(p.resolver): \(String(describing: p.connections))")
                } else {
                    #expect(p.connections == nil && p.firstQueryMs == nil)
                }
            }
            let rankMarkdown = try String(contentsOfFile: out + "/rank/rank.md", encoding: .utf8)
            #expect(rankMarkdown.contains("## Per transport") && rankMarkdown.contains("| https |"))

            // path: 60 probes at 60/s through each; the stream transports report RTT and timeouts, no loss per direction.
            let p = try tunnelprobe(["path", "--domain", lab.domain, "--key-file", lab.keyFile, "--out", out + "/path", "--quiet",
                                     "--seed", "3", "--rate", "60", "--count", "60", "--tmax", "1", "--tls-ca", ca]
                                    + resolvers.flatMap { ["--resolver", $0] })
            #expect(p.status == 0, "path: \(p.stderr)")
            let path = try JSONDecoder().decode(PathReport.self, from: Data(contentsOf: URL(fileURLWithPath: out + "/path/path.json")))
            #expect(path.resolvers.count == 1)
            let streams = try #require(path.streamResolvers)
            #expect(Set(streams.map(\.transport)) == [.tcp, .tls, .https])
            for s in streams {
                print("transport-rate-lab: path \(s.resolver) \(s.transport): \(s.answered)/\(s.sent) answered, \(s.timedOut) timed out, RTT p50 \(s.rttMs?.p50 ?? -1) p99 \(s.rttMs?.p99 ?? -1) ms, \(s.answeredRate) answers/s, first query \(s.firstQueryMs ?? -1) ms")
                #expect(s.sent == 60 && s.answered >= 58, "\(s.resolver)")
                #expect(s.rttMs != nil && s.firstQueryMs != nil && s.connections.opened >= 1)
            }
            let pathMarkdown = try String(contentsOfFile: out + "/path/path.md", encoding: .utf8)
            #expect(pathMarkdown.contains("## Over TCP, TLS and HTTPS") && pathMarkdown.contains("not observable"))
        }
    }

    /// A certificate signed by the lab's CA but expired is `expired`; a DoH server that answers an
    /// HTTP error status (unbound's 404 for a path other than its endpoint, reached with the key
    /// pinned, which checks neither the chain nor the dates) is `httpStatus`.
    @Test(.timeLimit(.minutes(2)))
    func anExpiredCertificateAndAnHTTPErrorStatusAreNamed() async throws {
        try transportRateLabGate.check()
        try await withLab(config: LabConfig(name: scanLabName(), serverCommand: serveCommand(), resolverTLS: true,
                                            resolverCertificateExpired: true)) { lab in
            let ca = LabCertificates.caPath(lab.stateDirectory)
            let name = LabCertificates.resolverName
            let v4 = lab.resolverAddress
            let (expired, _) = try scanWithExports(lab, ["--resolver", "tls://\(v4)#\(name)", "--tls-ca", ca, "--timeout", "1"])
            let pin = try run(["/bin/sh", "-c", "openssl x509 -in \(lab.stateDirectory)/resolver.pem -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64"]).stdout
                .trimmingCharacters(in: .whitespacesAndNewlines)
            let (status, _) = try scanWithExports(lab, ["--resolver", "https://\(v4)/not-the-endpoint#\(name)", "--tls-pin", pin, "--timeout", "1"])
            let e = try #require(expired.pairs.first), s = try #require(status.pairs.first)
            for pair in [e, s] {
                print("transport-rate-lab: \(pair.resolver): \(pair.transportFailure?.name ?? "-"): \(pair.reason ?? "")")
                #expect(!pair.accepted && pair.stage == .reachability, "\(pair.resolver)")
            }
            #expect(e.transportFailure?.name == "expired", "\(String(describing: e.transportFailure))")
            if case .expired(let notAfter)? = e.transportFailure {
                #expect(notAfter == 1_577_923_200, "notAfter 2020-01-02T00:00:00Z")
            }
            #expect(s.transportFailure == .httpStatus(404), "\(String(describing: s.transportFailure))")
        }
    }
}
