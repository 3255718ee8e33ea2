import Foundation
import ProbeClient
import TunnelVerify
import Testing
@testable import TunnelprobeCommands
@testable import Results

/// `serve --forward` and `scan --e2e`: their flags, and the pairs `--e2e` picks.
struct ForwardOptionsTests {
    private let serve = ["--domain", "vpn.lab.test", "--key-file", "/nonexistent.key"]

    @Test func forwardTakesAnAddressThatIsNotItsOwnListenAddress() throws {
        let parsed = try ServeCommand.parse(serve + ["--listen", "192.0.2.1:53", "--forward", "192.0.2.1:5300"])
        #expect(try parsed.forwardUpstream()?.port == 5300)
        #expect(try ServeCommand.parse(serve).forwardUpstream() == nil)
        for bad in [["--forward", "nonsense"], ["--forward", "192.0.2.1"], ["--listen", "192.0.2.1:53", "--forward", "192.0.2.1:53"],
                    ["--forward", "192.0.2.1:5300", "--forward-max-flows", "0"],
                    ["--forward", "192.0.2.1:5300", "--forward-idle-timeout", "0"]] {
            #expect(throws: (any Error).self, "\(bad)") { try ServeCommand.parse(serve + bad) }
        }
    }

    @Test func e2eNeedsItsProfileAndURL() throws {
        let scan = ["--resolver", "192.0.2.1", "--domain", "vpn.lab.test", "--key-file", "/nonexistent.key"]
        #expect(try ScanCommand.parse(scan).endToEnd.enabled == false)
        #expect(throws: (any Error).self) { try ScanCommand.parse(scan + ["--e2e"]) }
        #expect(throws: (any Error).self) { try ScanCommand.parse(scan + ["--e2e", "--e2e-profile", "p.json"]) }
        #expect(throws: (any Error).self) { try ScanCommand.parse(scan + ["--e2e", "--e2e-profile", "p.json", "--e2e-url", "ftp://x"]) }
        #expect(throws: (any Error).self) {
            try ScanCommand.parse(scan + ["--e2e", "--e2e-profile", "p.json", "--e2e-url", "http://192.0.2.2/", "--e2e-engine", "carrier-pigeon"])
        }
        let ok = try ScanCommand.parse(scan + ["--e2e", "--e2e-profile", "p.json", "--e2e-url", "http://192.0.2.2/", "--e2e-count", "3"])
        #expect(ok.endToEnd.enabled && ok.endToEnd.count == 3)
    }

    /// `--e2e-domain`: dnstt runs on the profile's tunnel domain unless told otherwise; the others
    /// on each pair's domain; any other value is refused.
    @Test func e2eDomainRule() throws {
        #expect(EndToEndOptions.usesProfileDomain(rule: nil, engine: .dnstt))
        #expect(!EndToEndOptions.usesProfileDomain(rule: .pair, engine: .dnstt))
        #expect(!EndToEndOptions.usesProfileDomain(rule: nil, engine: .iodine))
        #expect(EndToEndOptions.usesProfileDomain(rule: .profile, engine: .command))
        let scan = ["--resolver", "192.0.2.1", "--domain", "vpn.lab.test", "--key-file", "/nonexistent.key",
                    "--e2e", "--e2e-profile", "p.json", "--e2e-url", "http://192.0.2.2/"]
        #expect(try ScanCommand.parse(scan + ["--e2e-domain", "profile"]).endToEnd.domainRule == .profile)
        #expect(throws: (any Error).self) { try ScanCommand.parse(scan + ["--e2e-domain", "probe"]) }
    }

    /// The best usable pairs first: download bytes, then upload bytes, then RTT; rejected and lossy
    /// pairs never.
    @Test func e2ePicksTheBestUsablePairs() {
        func pair(_ resolver: String, up: Int, down: Int, rtt: Double, accepted: Bool = true, lossy: Bool = false) -> ScanPair {
            var p = ScanPair(resolver: resolver, domain: "vpn.lab.test", accepted: accepted,
                             upload: .init(bytes: up, qnameChars: 253, payloadChars: 237, encoding: "base32", limitedBy: nil, caseChanged: false),
                             download: .init(bytes: down, responseSize: down + 100, recordType: "TXT", limitedBy: nil),
                             rttMs: rtt, queries: 10)
            if lossy { p.lossExceeded = true }
            return p
        }
        let pairs = [pair("192.0.2.1:53", up: 100, down: 900, rtt: 5), pair("192.0.2.2:53", up: 140, down: 900, rtt: 9),
                     pair("192.0.2.3:53", up: 140, down: 1200, rtt: 50), pair("192.0.2.4:53", up: 148, down: 4000, rtt: 1, accepted: false),
                     pair("192.0.2.5:53", up: 148, down: 4000, rtt: 1, lossy: true), pair("192.0.2.6:53", up: 140, down: 900, rtt: 2)]
        #expect(EndToEndOptions.best(pairs, count: 3).map(\.resolver) == ["192.0.2.3:53", "192.0.2.6:53", "192.0.2.2:53"])
        #expect(EndToEndOptions.best(pairs, count: 10).count == 4)
    }
}
