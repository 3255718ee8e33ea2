import Foundation
import EngineModels
import Lab
import Logging
import ProbeClient
import Reports
import Testing
import TestSupport
import Results

/// Issue 19, items 1, 2 and 5: resolvers whose limits the lab knows, measured by `rank`.
///
/// The lab's rate-limited resolvers are impairment relays (`tunnelprobe impair`) in front of the
/// lab's unbound, each on its own port of the client address with its own limit: a policer
/// (`--up-rate R --up-rate-queue 0`, bursts of 5) that answers the excess REFUSED, as public
/// resolvers do, one that drops it, and a shaper with a queue (congestion: delay grows first).
@Suite(.serialized, .enabled(if: LabGate.labWithBinary.runs, "lab needs root, unbound, iproute2 and a built binary"))
struct RankLabTests {
    /// A relay in the client namespace on `port`, forwarding to the lab's resolver.
    static func relay(_ lab: LabStatus, port: Int, _ flags: [String]) throws -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = Lab.namespaceCommand(name: lab.name, role: .client, command: [
            TestEnvironment.binary, "impair", "--listen", "\(lab.clientAddress):\(port)",
            "--upstream", "\(lab.resolverAddress):53", "--seed", "3",
        ] + flags)
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        return p
    }

    /// Two rate limiters at rates no other test uses (45 and 130 queries per second) are measured
    /// within 15 % of their configured rate, told apart from a congested resolver (a 70 q/s shaper
    /// with a queue), ranked fastest first for every engine, and the plan for a goodput above the
    /// fastest one's takes the fastest first, then the next.
    @Test(.timeLimit(.minutes(5))) func rateLimitedResolversAreMeasuredAndRanked() async throws {
        try await withLab(limit: 1232) { lab in
            let slow = try Self.relay(lab, port: 5301, ["--up-rate", "45", "--up-rate-burst", "5", "--up-rate-queue", "0", "--up-rate-excess", "refuse"])
            let fast = try Self.relay(lab, port: 5302, ["--up-rate", "130", "--up-rate-burst", "5", "--up-rate-queue", "0"])
            let queued = try Self.relay(lab, port: 5303, ["--up-rate", "70", "--up-rate-queue", "1000"])
            defer {
                for p in [slow, fast, queued] { p.terminate(); p.waitUntilExit() }
            }
            try await Task.sleep(for: .milliseconds(800))
            let slowName = "\(lab.clientAddress):5301", fastName = "\(lab.clientAddress):5302", queuedName = "\(lab.clientAddress):5303"
            let out = FileManager.default.temporaryDirectory.appendingPathComponent("tp-rank-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: out) }
            // The scan stays under every limit (--per-resolver-qps 20).
            let s = try run(Lab.namespaceCommand(name: lab.name, role: .client, command: [
                TestEnvironment.binary, "scan", "--domain", lab.domain, "--key-file", lab.keyFile, "--out", out + "/scan", "--quiet",
                "--seed", "1", "--per-resolver-qps", "20", "--timeout", "1",
                "--resolver", slowName, "--resolver", fastName, "--resolver", queuedName,
            ]))
            #expect(s.status == 0, "scan: \(s.stderr)")
            let scanReport = try JSONDecoder().decode(ScanReport.self, from: Data(contentsOf: URL(fileURLWithPath: out + "/scan/scan.json")))
            #expect(scanReport.pairs.allSatisfy { $0.accepted }, "\(scanReport.pairs.map { $0.reason ?? "" })")
            let mdvDown = try #require(scanReport.engines?.first { $0.engine == .masterDnsVPNGo }?.synced.usable.first?.download.payloadBytes)
            // A target above what the fastest resolver moves alone: it and the next one are needed.
            let target = Int(130 * Double(mdvDown) * 1.2)
            let r = try run(Lab.namespaceCommand(name: lab.name, role: .client, command: [
                TestEnvironment.binary, "rank", "--scan", out + "/scan", "--key-file", lab.keyFile, "--out", out + "/rank",
                "--quiet", "--seed", "2", "--start-rate", "20", "--step-seconds", "2", "--pause-seconds", "0.5",
                "--timeout", "0.5", "--ceiling", "300", "--parallel", "3", "--target", "\(target)B/s", "--engine", "masterdnsvpn,dnstt",
            ]))
            #expect(r.status == 0, "rank: \(r.stderr)")
            let report = try JSONDecoder().decode(RankReport.self, from: Data(contentsOf: URL(fileURLWithPath: out + "/rank/rank.json")))
            #expect(report.schema == RankReport.schemaName && report.run.seed == 2)
            let bySlow = try #require(report.pairs.first { $0.resolver == slowName })
            let byFast = try #require(report.pairs.first { $0.resolver == fastName })
            let byQueue = try #require(report.pairs.first { $0.resolver == queuedName })
            #expect(abs(bySlow.sustainableRate - 45) <= 0.15 * 45, "slow: \(bySlow.sustainableRate) q/s, \(bySlow.evidence)")
            #expect(abs(byFast.sustainableRate - 130) <= 0.15 * 130, "fast: \(byFast.sustainableRate) q/s, \(byFast.evidence)")
            #expect(bySlow.limitedBy == .rateLimiter && byFast.limitedBy == .rateLimiter, "\(bySlow.evidence) / \(byFast.evidence)")
            #expect(bySlow.steps.contains { $0.refused > 0 } && !byFast.steps.contains { $0.refused > 0 })
            #expect(bySlow.recovered == true && byFast.recovered == true)
            #expect(byQueue.limitedBy == .congestion, "queued: \(byQueue.limitedBy) \(byQueue.evidence)")
            #expect(abs(byQueue.sustainableRate - 70) <= 0.25 * 70, "queued: \(byQueue.sustainableRate) q/s")
            for e in report.engines {
                let order = e.pairs.map(\.resolver)
                #expect(order.firstIndex(of: fastName)! < order.firstIndex(of: slowName)!, "\(e.name): \(order)")
                let resolvers = try #require(e.exports.first?.text)
                if e.engine == .masterDnsVPNGo {
                    // client_resolvers.txt, best first.
                    let lines = resolvers.split(separator: "\n").filter { !$0.hasPrefix("#") }.map(String.init)
                    #expect(lines.first == fastName, "\(lines)")
                    let plan = try #require(e.plan)
                    #expect(plan.reachable && plan.uses.map(\.resolver) == [fastName, queuedName], "\(plan)")
                    #expect(abs(plan.totalGoodput - Double(target)) < 1)
                }
            }
            let md = try String(contentsOfFile: out + "/rank/rank.md", encoding: .utf8)
            #expect(md.contains("RFC 7680") && md.contains("RFC 2544"))
        }
    }

    /// unbound's own per-client limit (`ip-ratelimit` 80, the excess dropped) on the lab's resolver:
    /// measured within 15 %, as a rate limiter that lets the client back in below it.
    @Test(.timeLimit(.minutes(3))) func unboundsIPRateLimitIsMeasured() async throws {
        try LabGate.labWithBinary.check()
        let name = "r" + String(UInt32.random(in: 0...UInt32.max), radix: 36).prefix(7)
        let logger = Logger(label: "lab-test")
        let config = LabConfig(name: name, resolverUDPLimit: 1232, serverCommand: [TestEnvironment.binary, "serve", "--rate-limit", "0"],
                               resolverIPRateLimit: 80)
        let lab = try await Lab.up(config, logger: logger)
        do {
            let out = FileManager.default.temporaryDirectory.appendingPathComponent("tp-rank-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: out) }
            let s = try run(Lab.namespaceCommand(name: lab.name, role: .client, command: [
                TestEnvironment.binary, "scan", "--domain", lab.domain, "--key-file", lab.keyFile, "--out", out + "/scan", "--quiet",
                "--seed", "1", "--per-resolver-qps", "20", "--engine", "masterdnsvpn", "--resolver", lab.resolverAddress,
            ]))
            #expect(s.status == 0, "scan: \(s.stderr)")
            let r = try run(Lab.namespaceCommand(name: lab.name, role: .client, command: [
                TestEnvironment.binary, "rank", "--scan", out + "/scan", "--key-file", lab.keyFile, "--out", out + "/rank", "--quiet",
                "--seed", "2", "--start-rate", "20", "--step-seconds", "2", "--pause-seconds", "0.5", "--timeout", "0.5", "--ceiling", "300",
            ]))
            #expect(r.status == 0, "rank: \(r.stderr)")
            let report = try JSONDecoder().decode(RankReport.self, from: Data(contentsOf: URL(fileURLWithPath: out + "/rank/rank.json")))
            let pair = try #require(report.pairs.first)
            #expect(abs(pair.sustainableRate - 80) <= 0.15 * 80 && pair.limitedBy == .rateLimiter, "\(pair.sustainableRate) q/s: \(pair.evidence)")
        } catch {
            try? await Lab.down(name: name, logger: logger)
            throw error
        }
        try await Lab.down(name: name, logger: logger)
    }

    @Test func gateIsHonest() throws {
        if TestEnvironment.labRequired { try LabGate.labWithBinary.check() }
    }
}
