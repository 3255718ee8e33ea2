import Results
import Testing
@testable import TunnelVerify

/// The evidence rule on synthetic packets: content decides before time, windows are half-open and
/// in nanoseconds, and no packet counts for two checks.
@Suite struct EvidenceRuleTests {
    static let leakName = "bh6lzafviwb6aki3.leak.tunnelprobe.invalid"
    static let failureName = "failure123.leak.tunnelprobe.invalid"

    static func rule() -> EvidenceRule {
        var rule = EvidenceRule(ipv6Target: "2001:db8:ffff::1")
        rule.checksStart = .milliseconds(9_000)
        rule.failureStart = .milliseconds(10_500)
        rule.dnsLeakNames = [leakName]
        rule.failureNames = [failureName]
        return rule
    }

    static func dns(_ name: String) -> UplinkPacket {
        var p = UplinkPacket(atMs: 0, kind: .dns, length: 80)
        p.family = 4
        p.destination = "198.18.0.1"
        p.destinationPort = 53
        p.query = "A \(name)."
        return p
    }

    static func ipv6(port: Int) -> UplinkPacket {
        var p = UplinkPacket(atMs: 0, kind: .ipv6, length: 60)
        p.family = 6
        p.destination = "2001:db8:ffff::1"
        p.destinationPort = port
        return p
    }

    @Test func aLeakQueryAtTheFailureWindowsFirstNanosecondIsStillADNSLeak() {
        let rule = Self.rule()
        // The race of the issue: the leak check's queries stamped at the very start of the failure window.
        #expect(rule.owner(of: Self.dns(Self.leakName), at: .milliseconds(10_500)) == .dnsLeak)
        #expect(rule.owner(of: Self.dns(Self.leakName.uppercased()), at: .milliseconds(10_500) + .nanoseconds(1)) == .dnsLeak)
        #expect(rule.owner(of: Self.dns(Self.leakName), at: .milliseconds(20_000)) == .dnsLeak)
        // And a query the failure check made is the failure check's, even stamped early.
        #expect(rule.owner(of: Self.dns(Self.failureName), at: .milliseconds(10_499)) == .tunnelFailure)
    }

    @Test func unnamedQueriesFollowHalfOpenWindows() {
        let rule = Self.rule()
        let other = Self.dns("example.test")
        #expect(rule.owner(of: other, at: .milliseconds(9_000) - .nanoseconds(1)) == .none)
        #expect(rule.owner(of: other, at: .milliseconds(9_000)) == .dnsLeak)
        #expect(rule.owner(of: other, at: .milliseconds(10_500) - .nanoseconds(1)) == .dnsLeak)
        #expect(rule.owner(of: other, at: .milliseconds(10_500)) == .tunnelFailure)
    }

    @Test func theIPv6ProbesAreTheirChecksByPort() {
        let rule = Self.rule()
        #expect(rule.owner(of: Self.ipv6(port: 443), at: .milliseconds(10_500)) == .ipv6Leak)
        #expect(rule.owner(of: Self.ipv6(port: 8443), at: .milliseconds(10_499)) == .tunnelFailure)
        // Any other IPv6 packet before the failure window is an IPv6 leak, after it a failure leak.
        var other = Self.ipv6(port: 80)
        other.destination = "2001:db8:5::1"
        #expect(rule.owner(of: other, at: .milliseconds(1)) == .ipv6Leak)
        #expect(rule.owner(of: other, at: .milliseconds(10_500)) == .tunnelFailure)
    }

    @Test func carrierAndLinkUpkeepAreNobodysEvidence() {
        let rule = Self.rule()
        var carrier = Self.dns(Self.leakName)
        carrier.kind = .carrier
        #expect(rule.owner(of: carrier, at: .milliseconds(9_500)) == .none)
        var nd = Self.ipv6(port: 0)
        nd.kind = .linkControl
        #expect(rule.owner(of: nd, at: .milliseconds(11_000)) == .none)
    }

    @Test func withoutTheFailureCheckNothingIsFiledUnderIt() {
        var rule = Self.rule()
        rule.failureStart = nil
        #expect(rule.owner(of: Self.dns("example.test"), at: .seconds(100)) == .dnsLeak)
        #expect(rule.owner(of: Self.ipv6(port: 8443), at: .seconds(100)) == .ipv6Leak)
    }
}
