import Base
import DNSWire
import Foundation
@testable import Lab
import ProbeClient
import ProbeProtocol
import OSLayer
import Reports
import Testing
import TestSupport

/// The lab's unbound over UDP, DoT (RFC 7858) and DoH (RFC 8484), on IPv4 and IPv6, with a CA made
/// for the run: max-udp-size 700 toward clients and edns-buffer-size 1400 upstream, the responder
/// honouring the upstream size (`serve --edns honor`, as an authoritative server does).
/// The lab with a CA (openssl) and an independent client (kdig).
let transportLabGate = LabGate(tools: [("ip", "iproute2"), ("unbound", "unbound"), ("openssl", "openssl"), ("kdig", "knot-dnsutils")],
                               binary: true)

@Suite(.serialized, .enabled(if: transportLabGate.runs, "lab needs root, unbound, openssl, kdig and a built binary"))
struct TransportLabTests {

    static let clientLimit = 700
    static let upstream = 1400

    static func config() -> LabConfig {
        LabConfig(name: scanLabName(), resolverUDPLimit: clientLimit, serverCommand: serveCommand(["--edns", "honor"]),
                  resolverUpstreamEDNS: upstream, resolverTLS: true, resolverIPv6: true)
    }

    /// UDP reports the 700-byte client leg; TCP, DoT and DoH the resolver's upstream EDNS size with the
    /// resolver-to-server leg named; upload 253 on all; the same through the IPv6 address; DoH GET
    /// as POST. Then an independent client (kdig) gets the same answer size over TLS and HTTPS and
    /// a truncated one over UDP.
    @Test(.timeLimit(.minutes(3)))
    func eachTransportNamesTheLegThatBoundIt() async throws {
        try transportLabGate.check()
        try await withLab(config: Self.config()) { lab in
            let ca = LabCertificates.caPath(lab.stateDirectory)
            let name = LabCertificates.resolverName
            let v4 = lab.resolverAddress, v6 = "[\(LabTopology.resolverAddress6)]"
            let resolvers = [v4, "tls://\(v4)#\(name)", "https://\(v4)/dns-query#\(name)",
                             v6, "tls://\(v6)", "https://\(v6)/dns-query#\(name)",
                             // Plain TCP (RFC 7766) on one of the resolver's aliases (198.18.0.1:53 is the UDP pair).
                             "tcp://\(Lab.aliasProbeAddress)"]
            let (report, files) = try scanWithExports(lab, resolvers.flatMap { ["--resolver", $0] } + ["--tls-ca", ca, "--timeout", "1"])
            #expect(report.pairs.count == 7)
            for pair in report.pairs {
                let transport = try #require(pair.transport, "\(pair.resolver)")
                let download = pair.download
                print("transport-lab: \(pair.resolver) \(transport) upload \(pair.upload?.qnameChars ?? 0) download \(download?.responseSize ?? 0) limitedBy \(download?.limitedBy?.rawValue ?? "-") leg \(download?.limitingLeg?.rawValue ?? "-") rtt \(pair.rttMs ?? 0) ms")
                #expect(pair.accepted, "\(pair.resolver): \(pair.reason ?? "")")
                #expect(pair.upload?.qnameChars == 253, "\(pair.resolver)")
                let size = try #require(download?.responseSize, "\(pair.resolver)")
                if transport == .udp {
                    #expect(size <= Self.clientLimit && size >= Self.clientLimit - 2, "\(pair.resolver): \(size)")
                    #expect(download?.limitedBy == .resolverLimit && download?.limitingLeg == .clientLeg, "\(pair.resolver)")
                } else {
                    #expect(size <= Self.upstream && size >= Self.upstream - 2, "\(pair.resolver): \(size)")
                    #expect(download?.limitedBy == .upstreamEDNS && download?.limitingLeg == .resolverToServer, "\(pair.resolver)")
                    #expect(download?.upstreamEDNS == Self.upstream)
                }
            }
            #expect(Set(report.pairs.compactMap(\.transport)) == [.udp, .tcp, .tls, .https])
            #expect(report.pairs.contains { $0.resolver == "tls://\(LabTopology.resolverClientSideAddress):853#\(name)" })
            #expect(files["scan.md"]?.isEmpty == false)

            // DoH GET (the query base64url in the URL) measures what POST does.
            let (get, _) = try scanWithExports(lab, ["--resolver", "https://\(v4)/dns-query#\(name)", "--tls-ca", ca,
                                                     "--doh-method", "get", "--timeout", "1"])
            let viaGet = try #require(get.pairs.first)
            #expect(viaGet.accepted && viaGet.download?.limitingLeg == .resolverToServer, "\(viaGet.reason ?? "")")
            #expect((viaGet.download?.responseSize ?? 0) >= Self.upstream - 2)

            // kdig, an independent client, asks the same download probe as the scan's largest answer.
            let tls = try #require(report.pairs.first { $0.transport == .tls && $0.resolver.contains(v4) })
            let bytes = try #require(tls.download?.bytes)
            let probe = try Self.probeName(lab, bytes: bytes, queryCharacters: tls.upload?.payloadChars ?? 0)
            let kdig = try #require(Executables.locate("kdig"), "kdig (knot-dnsutils) missing")
            let base = [kdig, "@\(LabTopology.resolverClientSideAddress)", probe, "TXT", "+bufsize=4096"]
            // +nopadding: kdig pads over TLS by default (RFC 8467), and unbound then pads its answer to 468-byte blocks.
            let overTLS = try kdigRun(lab, base + ["-p", "853", "+tls-ca=\(ca)", "+tls-hostname=\(name)", "+nopadding"])
            let overHTTPS = try kdigRun(lab, base + ["-p", "443", "+https=/dns-query", "+tls-ca=\(ca)", "+tls-hostname=\(name)"])
            let overUDP = try kdigRun(lab, base + ["+ignore"])
            print("transport-lab: kdig \(bytes)-byte probe: tls \(overTLS.size ?? 0) B, https \(overHTTPS.size ?? 0) B, udp \(overUDP.size ?? 0) B tc \(overUDP.truncated); scan responseSize \(tls.download?.responseSize ?? 0)")
            #expect(overTLS.size == tls.download?.responseSize && !overTLS.truncated, "kdig +tls: \(overTLS)")
            #expect(overHTTPS.size == tls.download?.responseSize && !overHTTPS.truncated, "kdig +https: \(overHTTPS)")
            #expect(overUDP.truncated, "kdig UDP at \(bytes) bytes: \(overUDP)")
        }
    }

    /// A wrong server name, a port that does not speak TLS, a port nothing listens on, a CA the
    /// client does not trust and a pin the key does not match each give their own named reason; the
    /// right pin carries without the CA.
    @Test(.timeLimit(.minutes(2)))
    func tlsFailuresAreNamed() async throws {
        try transportLabGate.check()
        try await withLab(config: Self.config()) { lab in
            let ca = LabCertificates.caPath(lab.stateDirectory)
            let v4 = lab.resolverAddress
            let (named, _) = try scanWithExports(lab, ["--resolver", "tls://\(v4)#wrong.lab.test", "--resolver", "tls://\(v4):53",
                                                       "--resolver", "https://\(v4):8443/dns-query", "--tls-ca", ca, "--timeout", "1"])
            let (untrusted, _) = try scanWithExports(lab, ["--resolver", "tls://\(v4)#\(LabCertificates.resolverName)", "--timeout", "1"])
            // The key pinned (SPKI SHA-256, as kdig +tls-pin) instead of the CA: the right pin carries, another is named.
            let pin = try run(["/bin/sh", "-c", "openssl x509 -in \(lab.stateDirectory)/resolver.pem -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64"]).stdout
                .trimmingCharacters(in: .whitespacesAndNewlines)
            let (pinned, _) = try scanWithExports(lab, ["--resolver", "tls://\(v4)#\(LabCertificates.resolverName)", "--tls-pin", pin, "--timeout", "1"])
            let pinnedPair = try #require(pinned.pairs.first)
            print("transport-lab: pinned \(pin): \(pinnedPair.resolver) accepted \(pinnedPair.accepted) download \(pinnedPair.download?.responseSize ?? 0)")
            #expect(pinnedPair.accepted && pinnedPair.download?.limitingLeg == .resolverToServer, "\(pinnedPair.reason ?? "")")
            let otherPin = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
            let (mispinned, _) = try scanWithExports(lab, ["--resolver", "https://\(v4)/dns-query#\(LabCertificates.resolverName)",
                                                           "--tls-pin", otherPin, "--timeout", "1"])
            var seen: [String: String] = [:]
            for pair in named.pairs + untrusted.pairs + mispinned.pairs {
                print("transport-lab: \(pair.resolver): \(pair.transportFailure?.name ?? "-"): \(pair.reason ?? "")")
                #expect(!pair.accepted && pair.stage == .reachability, "\(pair.resolver)")
                seen[pair.resolver] = pair.transportFailure?.name
            }
            #expect(seen["tls://\(v4):853#wrong.lab.test"] == "wrongName")
            // unbound's plain TCP port reads the ClientHello as a DNS length and waits: TLS not offered.
            #expect(seen["tls://\(v4):53"] == "handshakeTimeout")
            #expect(seen["https://\(v4):8443/dns-query"] == "connectionRefused")
            #expect(seen["tls://\(v4):853#\(LabCertificates.resolverName)"] == "unknownCA")
            #expect(seen["https://\(v4):443/dns-query#\(LabCertificates.resolverName)"] == "pinMismatch")
        }
    }

    /// The text of a download probe the responder answers with `bytes` payload bytes.
    static func probeName(_ lab: LabStatus, bytes: Int, queryCharacters: Int) throws -> String {
        let key = try ProbeKey.load(path: lab.keyFile)
        let meta = ProbeMeta.download(nonce: Prober.nonce(), bytes: bytes, type: .txt,
                                      totalCharacters: max(ProbeMeta.characterCount, queryCharacters))
        return try ProbeName.build(meta: meta, zone: DNSName(lab.domain), key: key).description
    }
}

/// One kdig run in the client namespace: the answer's size (";; Received N B") and its TC flag.
func kdigRun(_ lab: LabStatus, _ argv: [String]) throws -> (size: Int?, truncated: Bool, output: String) {
    let r = try run(Lab.namespaceCommand(name: lab.name, role: .client, command: argv))
    let output = r.stdout
    var size: Int?
    var truncated = false
    for line in output.split(separator: "\n") {
        if line.hasPrefix(";; Received "), let n = line.split(separator: " ").dropFirst(2).first.flatMap({ Int($0) }) { size = n }
        if line.hasPrefix(";; Flags:") { truncated = line.split(separator: " ").contains("tc") }
    }
    return (size, truncated, output)
}
