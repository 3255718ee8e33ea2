import DNSWire
import Foundation
import Reports
import Results
import Testing
@testable import TunnelVerify

struct SplitCheckTests {
    func packet(_ destination: String, at: Int = 1, port: Int = 9, query: String? = nil) -> UplinkPacket {
        UplinkPacket(atMs: at, kind: query == nil ? (destination.contains(":") ? .ipv6 : .ipv4) : .dns, family: destination.contains(":") ? 6 : 4,
                     source: destination.contains(":") ? "2001:db8:7:8::2" : "198.19.0.2", destination: destination, transport: "udp",
                     sourcePort: 40000, destinationPort: port, query: query, length: 60)
    }

    @Test func prefixTargetsOnBothSidesAndBothFamilies() {
        let split = Profile.Split(mode: .include, entries: ["198.18.2.0/24", "198.18.3.0/24"])
        let targets = SplitCheck.targets(split)
        #expect(targets.tunnelled == ["198.18.2.1", "198.18.3.1"] && targets.direct == ["203.0.113.1"])
        #expect(SplitCheck.isTunnelled(split, "198.18.3.200") && !SplitCheck.isTunnelled(split, "198.18.4.1"))
        let exclude = Profile.Split(mode: .exclude, entries: ["203.0.113.0/24"])
        #expect(SplitCheck.targets(exclude).direct == ["203.0.113.1"] && SplitCheck.targets(exclude).tunnelled == ["192.0.2.1"])
        // IPv6 in the split: an IPv6 destination on the other side too.
        let dual = Profile.Split(mode: .include, entries: ["198.18.2.0/24", "2001:db8:ffff::/48"])
        #expect(SplitCheck.targets(dual).tunnelled == ["198.18.2.1", "2001:db8:ffff::1"])
        #expect(SplitCheck.targets(dual).direct == ["203.0.113.1", "2001:db8:fffe::1"])
    }

    @Test func resolvedDomainsBecomeHostRoutesAndTargets() {
        let split = Profile.Split(mode: .include, entries: ["198.18.2.0/24", "in.split.test"])
        let routed = SplitCheck.Routed(split, resolved: ["in.split.test": ["198.51.100.80", "2001:db8:5911::80"]])
        #expect(routed.prefixes.map(\.description) == ["198.18.2.0/24", "198.51.100.80/32", "2001:db8:5911::80/128"])
        #expect(routed.owners == ["198.51.100.80": "in.split.test", "2001:db8:5911::80": "in.split.test"])
        let targets = SplitCheck.targets(routed)
        #expect(targets.tunnelled == ["198.18.2.1", "198.51.100.80", "2001:db8:5911::80"])
        #expect(targets.direct == ["203.0.113.1", "2001:db8:ffff::1"])
        // Before resolution the domain adds nothing.
        #expect(SplitCheck.Routed(split).prefixes.count == 1)
    }

    @Test func prefixVerdictNamesMisroutedPacketsOfBothFamilies() {
        let split = Profile.Split(mode: .include, entries: ["198.18.2.0/24", "198.18.3.0/24", "2001:db8:ffff::/48"])
        let routed = SplitCheck.Routed(split)
        let targets = SplitCheck.targets(routed)
        let verdict = SplitCheck.judge(declared: split, routed: routed, domains: [], targets: targets,
                                       uplink: [packet("203.0.113.1"), packet("198.18.3.1"), packet("2001:db8:ffff::1")],
                                       tun: [packet("198.18.2.1"), packet("203.0.113.1"), packet("2001:db8:fffe::1")])
        #expect(!verdict.ok)
        #expect(verdict.clearOnUplink.map(\.destination) == ["198.18.3.1", "2001:db8:ffff::1"])
        #expect(verdict.insideTunnel.map(\.destination) == ["203.0.113.1", "2001:db8:fffe::1"])
        let fine = SplitCheck.judge(declared: split, routed: routed, domains: [], targets: targets,
                                    uplink: [packet("203.0.113.1"), packet("2001:db8:fffe::1")],
                                    tun: [packet("198.18.2.1"), packet("198.18.3.1"), packet("2001:db8:ffff::1")])
        #expect(fine.ok && fine.unseenProbes.isEmpty, "\(fine)")
    }

    @Test func domainVerdictCatchesAddressesAndLookupsInClear() {
        let split = Profile.Split(mode: .include, entries: ["198.18.2.0/24", "in.split.test"])
        let resolved = ["in.split.test": ["198.51.100.80", "2001:db8:5911::80"]]
        let routed = SplitCheck.Routed(split, resolved: resolved)
        let domains = [ResilienceResult.Split.Domain(name: "in.split.test", side: "tunnel", server: "198.18.2.2",
                                                     addresses: resolved["in.split.test"]!, note: nil)]
        let targets = SplitCheck.targets(routed)
        // Right: the domain's addresses and its lookup inside the TUN, the outside addresses on the uplink.
        let right = SplitCheck.judge(declared: split, routed: routed, domains: domains, targets: targets,
                                     uplink: [packet("203.0.113.1"), packet("2001:db8:ffff::1")],
                                     tun: [packet("198.18.2.2", port: 53, query: "A in.split.test."), packet("198.18.2.1"),
                                           packet("198.51.100.80"), packet("2001:db8:5911::80")])
        #expect(right.ok, "\(right)")
        // Wrong: the lookup went to a resolver on the direct side and the IPv4 address was routed direct.
        let wrong = SplitCheck.judge(declared: split, routed: routed, domains: domains, targets: targets,
                                     uplink: [packet("198.18.0.1", at: 5, port: 53, query: "AAAA In.Split.Test."),
                                              packet("198.18.0.1", at: 6, port: 53, query: "A other.test."),
                                              packet("198.51.100.80", at: 9), packet("203.0.113.1"), packet("2001:db8:ffff::1")],
                                     tun: [packet("198.18.2.1"), packet("2001:db8:5911::80")])
        #expect(!wrong.ok)
        #expect(wrong.clearOnUplink.map(\.atMs) == [5, 9])
        #expect(wrong.clearOnUplink.allSatisfy { $0.domain == "in.split.test" })
        #expect(wrong.clearOnUplink[0].summary.contains("DNS AAAA In.Split.Test.") && wrong.clearOnUplink[0].summary.hasSuffix("[in.split.test]"))
        #expect(wrong.unseenProbes == ["198.51.100.80"])
        // A domain that did not resolve cannot be checked: not ok, and said why.
        let unresolved = [ResilienceResult.Split.Domain(name: "in.split.test", side: "tunnel", server: nil, addresses: [], note: "no answer")]
        let blind = SplitCheck.judge(declared: split, routed: SplitCheck.Routed(split), domains: unresolved,
                                     targets: SplitCheck.targets(SplitCheck.Routed(split)),
                                     uplink: [packet("203.0.113.1")], tun: [packet("198.18.2.1")])
        #expect(!blind.ok && blind.notes.contains { $0.contains("in.split.test did not resolve") })
    }

    @Test func excludedDomainsGoDirect() {
        let split = Profile.Split(mode: .exclude, entries: ["out.split.test"])
        let routed = SplitCheck.Routed(split, resolved: ["out.split.test": ["203.0.113.80"]])
        let targets = SplitCheck.targets(routed)
        #expect(targets.direct == ["203.0.113.80"] && targets.tunnelled == ["203.0.113.1"])
        let verdict = SplitCheck.judge(declared: split, routed: routed, domains: [], targets: targets,
                                       uplink: [packet("203.0.113.1")], tun: [packet("203.0.113.80")])
        #expect(verdict.insideTunnel.map(\.domain) == ["out.split.test"])
        #expect(verdict.clearOnUplink.map(\.destination) == ["203.0.113.1"])
    }

    @Test func addressesFollowCNAMEsInTheAnswer() throws {
        let alias = try DNSName("alias.split.test."), target = try DNSName("in.split.test."), other = try DNSName("x.test.")
        let message = DNSMessage(header: DNSHeader(id: 1, isResponse: true), answers: [
            DNSResourceRecord(name: alias, ttl: 60, rdata: .cname(target)),
            DNSResourceRecord(name: target, ttl: 60, rdata: .a([198, 51, 100, 80])),
            DNSResourceRecord(name: target, ttl: 60, rdata: .aaaa([0x20, 0x01, 0x0d, 0xb8, 0x59, 0x11] + [UInt8](repeating: 0, count: 9) + [0x80])),
            DNSResourceRecord(name: other, ttl: 60, rdata: .a([192, 0, 2, 9])),
        ])
        #expect(SplitCheck.addressesFor("alias.split.test", in: message) == ["198.51.100.80", "2001:db8:5911::80"])
        #expect(SplitCheck.addressesFor("nothing.test", in: message).isEmpty)
    }
}
