import Foundation
import Lab
import ProbeClient
import Reports
import Results
import Testing
import TestSupport

/// Issue 29 on the simulated internet: an explicit IPv6 list swept over an IPv6 socket, its
/// answering hosts MTU-scanned, and a list of IPv4 and IPv6 entries swept in one run. The simulated
/// hosts answer on 2001:db8:19::/112 with the same seeded mix as the IPv4 /16.
@Suite(.serialized, .enabled(if: LabGate.labWithBinary.runs, "the simulated internet needs root, iproute2 and a built binary"))
struct SweepIPv6LabTests {
    /// The behaviours whose MTU scan is accepted (a rate limit of 20 queries per second is above the
    /// scan's --per-resolver-qps; the lossy hosts are made reliable with --loss-rate 0).
    static let accepting: Set<SimulatedInternet.Behaviour> = [.honest, .slow, .rateLimited, .lossy]
    static let common = ["--rate", "2000", "--timeout", "1", "--per-resolver-qps", "15", "--seed", "8", "--engine", "masterdnsvpn"]

    /// What one sweep wrote.
    struct Outcome {
        var answering: Set<String>
        var accepted: Set<String>
        var report: ScanReport
        var counts: SimulatedResponder.ProbeCounts
        var truth: SimulatedInternet.Truth
    }

    static func sweep(_ list: String, seed: UInt64) throws -> Outcome {
        let sim = try SimulatedInternetProcess(seed: seed, answering: 0.1, extra: ["--loss-rate", "0"])
        var stopped = false
        defer { if !stopped { sim.stop() } }
        let ranges = sim.dir + "/list.txt"
        try list.write(toFile: ranges, atomically: true, encoding: .utf8)
        let out = sim.dir + "/report"
        let p = sim.sweep(["--ranges", ranges, "--out", out] + common)
        try p.run()
        #expect(p.waitUntilExitOrKill(seconds: 45), "the sweep did not exit")
        #expect(p.terminationStatus == 0)
        func lines(_ name: String) throws -> Set<String> {
            Set(try String(contentsOfFile: out + "/" + name, encoding: .utf8).split(separator: "\n").map(String.init))
        }
        let report = try JSONDecoder().decode(ScanReport.self, from: Data(contentsOf: URL(fileURLWithPath: out + "/scan.json")))
        let outcome = (try lines("answering.txt"), try lines("accepted.txt"), report, try sim.truth)
        stopped = true
        let counts = try #require(sim.stop(), "lab internet wrote no probes.json")
        return Outcome(answering: outcome.0, accepted: outcome.1, report: outcome.2, counts: counts, truth: outcome.3)
    }

    /// Each accepted honest-type host's download MTU is its UDP limit (the largest answer that fits,
    /// within the 2 bytes the search's step leaves), below the limits the scan cannot reach.
    static func checkMTUs(_ o: Outcome, hosts: [SimulatedInternet.Host]) {
        for host in hosts where accepting.contains(host.behaviour) {
            let pair = o.report.pairs.first { $0.resolver == host.address + ":53" }
            guard let size = pair?.download?.responseSize, let limit = host.udpLimit else {
                Issue.record("\(host.address) (\(host.behaviour)): no download MTU (\(pair?.reason ?? "not measured"))")
                continue
            }
            #expect(size <= limit, "\(host.address): response \(size) above its limit \(limit)")
            if limit < 4096 { #expect(size >= limit - 2, "\(host.address): response \(size), limit \(limit)") }
        }
    }

    /// A /120 of the IPv6 hosts (256 addresses, a tenth answering): every host that is not silent
    /// answers and no silent one does; every address gets one sweep probe; the accepted set is the
    /// honest-type hosts, each with its UDP limit as the download MTU; the exports write the
    /// addresses as [2001:db8:19::x].
    @Test(.timeLimit(.minutes(1)))
    func ipv6ListIsSweptAndMeasured() async throws {
        try LabGate.labWithBinary.check()
        let o = try Self.sweep("# IPv6 hosts of the simulated internet\n2001:db8:19::/120\n", seed: 291)
        let hosts = (o.truth.hosts6 ?? []).filter { $0.address.hasPrefix("[2001:db8:19::") && $0.address.count <= "[2001:db8:19::ff]".count }
        #expect(hosts.count > 10, "the /120 holds \(hosts.count) answering hosts")
        #expect(o.answering == Set(hosts.map(\.address)),
                "missed: \(Set(hosts.map(\.address)).subtracting(o.answering).sorted().prefix(5)); extra: \(o.answering.subtracting(hosts.map(\.address)).sorted().prefix(5))")
        #expect(o.counts.addressesProbed6 == 256 && o.counts.sweepProbes6 == 256 && o.counts.probedTwice6 == [:])
        #expect(o.counts.sweepProbes == 0)
        let expected = Set(hosts.filter { Self.accepting.contains($0.behaviour) }.map(\.address))
        #expect(o.accepted == expected, "only accepted: \(o.accepted.subtracting(expected).sorted()); not accepted: \(expected.subtracting(o.accepted).sorted())")
        Self.checkMTUs(o, hosts: hosts)
        for host in hosts where host.behaviour == .hijacker {
            #expect(o.report.pairs.first { $0.resolver == host.address + ":53" }?.stage == .honesty, "hijacker \(host.address)")
        }
    }

    /// A list of a /24 and a /120 (and a single IPv6 address inside the /120, merged) swept in one
    /// run: both families found and measured, every address probed once.
    @Test(.timeLimit(.minutes(1)))
    func mixedListIsSweptInOneRun() async throws {
        try LabGate.labWithBinary.check()
        let o = try Self.sweep("198.19.7.0/24\n2001:db8:19::/120\n[2001:db8:19::7]\n", seed: 292)
        let v4 = o.truth.hosts.filter { $0.address.hasPrefix("198.19.7.") }
        let v6 = (o.truth.hosts6 ?? []).filter { $0.address.count <= "[2001:db8:19::ff]".count }
        #expect(v4.count > 10 && v6.count > 10, "\(v4.count) IPv4 and \(v6.count) IPv6 hosts")
        #expect(o.answering == Set((v4 + v6).map(\.address)))
        #expect(o.counts.addressesProbed == 256 && o.counts.sweepProbes == 256 && o.counts.probedTwice.isEmpty)
        #expect(o.counts.addressesProbed6 == 256 && o.counts.sweepProbes6 == 256 && o.counts.probedTwice6 == [:])
        let expected = Set((v4 + v6).filter { Self.accepting.contains($0.behaviour) }.map(\.address))
        #expect(o.accepted == expected, "only accepted: \(o.accepted.subtracting(expected).sorted()); not accepted: \(expected.subtracting(o.accepted).sorted())")
        Self.checkMTUs(o, hosts: v4 + v6)
    }
}
