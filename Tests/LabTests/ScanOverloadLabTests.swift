import Foundation
import Lab
import Logging
import ProbeClient
import Reports
import Testing
import TestSupport
import Results

/// A lab whose unbound holds few queries at once (`resolverQueriesPerThread`) or runs as shipped
/// (`stock`: one thread, default socket buffers), always taken down.
func withBusyLab(queriesPerThread: Int?, limit: Int, stock: Bool = false,
                 _ body: (LabStatus) async throws -> Void) async throws {
    try LabGate.labWithBinary.check()
    let name = "o" + String(UInt32.random(in: 0...UInt32.max), radix: 36).prefix(7)
    let logger = Logger(label: "lab-test")
    let config = LabConfig(name: name, resolverUDPLimit: limit,
                           serverCommand: [TestEnvironment.binary, "serve", "--rate-limit", "0"],
                           resolverQueriesPerThread: queriesPerThread, resolverStock: stock)
    let status = try await Lab.up(config, logger: logger)
    do {
        try await body(status)
    } catch {
        try? await Lab.down(name: name, logger: logger)
        throw error
    }
    try await Lab.down(name: name, logger: logger)
}

/// Issue 19, item 3: the scan's own load is never read as a size limit.
@Suite(.serialized, .enabled(if: LabGate.labWithBinary.runs, "lab needs root, unbound, iproute2 and a built binary"))
struct ScanOverloadLabTests {
    /// What a pair measured, for comparing two scans.
    struct Figures: Hashable, CustomStringConvertible {
        var accepted: Bool
        var qnameChars: Int?
        var responseSize: Int?
        var upLimit: SizeLimit?
        var downLimit: SizeLimit?
        var description: String {
            "\(accepted ? "accepted" : "rejected") \(qnameChars ?? -1)/\(responseSize ?? -1) (\(upLimit?.rawValue ?? "-"), \(downLimit?.rawValue ?? "-"))"
        }
    }

    static func figures(_ report: ScanReport) -> [String: Figures] {
        Dictionary(uniqueKeysWithValues: report.pairs.map { ($0.resolver, figure($0)) })
    }

    static func figure(_ pair: ScanPair) -> Figures {
        Figures(accepted: pair.accepted, qnameChars: pair.upload?.qnameChars, responseSize: pair.download?.responseSize,
                upLimit: pair.upload?.limitedBy, downLimit: pair.download?.limitedBy)
    }

    /// 1,000 addresses of one unbound that holds 2 x 100 queries at once: a scan of 1,000 pairs at
    /// once overloads it. With the congestion window, --concurrency 1000 gives every pair the MTUs
    /// that --concurrency 256 gives (exact: 253 name characters, 1232-byte answers, bound by TC);
    /// without it, the same scan loses pairs, so the bottleneck is real and the comparison means
    /// something.
    @Test(.timeLimit(.minutes(4))) func concurrency1000GivesTheMTUsOf256() async throws {
        try await withBusyLab(queriesPerThread: 100, limit: 1232) { lab in
            let common = ["--resolver", "198.18.4.0/22", "--cidr-cap", "1000", "--record-type", "TXT", "--engine", "masterdnsvpn"]
            let at256 = try scan(lab, common + ["--concurrency", "256"])
            let at1000 = try scan(lab, common + ["--concurrency", "1000"])
            let base = Self.figures(at256)
            #expect(base.count == 1000 && at1000.pairs.count == 1000)
            let exact = Figures(accepted: true, qnameChars: 253, responseSize: 1232, upLimit: nil, downLimit: .resolverLimit)
            let wrongAt256 = base.filter { $0.value != exact }
            #expect(wrongAt256.isEmpty, "at 256: \(wrongAt256.prefix(5))")
            let differing = at1000.pairs.filter { base[$0.resolver] != Self.figure($0) }
            #expect(differing.isEmpty, "\(differing.count) pairs differ at 1000, e.g. \(differing.prefix(5).map { "\($0.resolver) \(Self.figure($0)): \($0.reason ?? "accepted")" })")
            #expect(at1000.synced == at256.synced)
            // The window acted: it met the bottleneck and halved.
            let window = try #require(at1000.congestion)
            #expect(window.ceiling == 1000 && window.decreases >= 1, "\(window)")
            print("one overloaded unbound at 1000: window \(window)")

            let uncontrolled = try scan(lab, common + ["--concurrency", "1000", "--no-congestion-control"])
            #expect(uncontrolled.congestion == nil)
            let damaged = Self.figures(uncontrolled).filter { base[$0.key] != $0.value }
            #expect(!damaged.isEmpty, "without the window the lab's bottleneck should fail pairs; it failed none")
        }
    }

    /// Issue 27, item 2: 1,000 addresses of one stock unbound (one thread, default buffers), all
    /// 1,000 pairs at once. The first burst of 1,000 reachability probes overflows its socket and a
    /// few were lost twice, which the scan read as "reachability: timeout"; a timeout sent while the
    /// scan was busy is now retried once the scan is quiet, so every pair gets its exact MTUs.
    @Test(.timeLimit(.minutes(2))) func aStockUnboundGivesEveryPairAt1000() async throws {
        try await withBusyLab(queriesPerThread: nil, limit: 1232, stock: true) { lab in
            let report = try scan(lab, ["--resolver", "198.18.4.0/22", "--cidr-cap", "1000", "--record-type", "TXT",
                                        "--per-resolver-qps", "0", "--concurrency", "1000"])
            let figures = Self.figures(report)
            #expect(figures.count == 1000)
            let exact = Figures(accepted: true, qnameChars: 253, responseSize: 1232, upLimit: nil, downLimit: .resolverLimit)
            let wrong = report.pairs.filter { Self.figure($0) != exact }
            #expect(wrong.isEmpty, "\(wrong.count) of 1000 pairs not exact, e.g. \(wrong.prefix(5).map { "\($0.resolver): \($0.reason ?? "accepted, other MTU")" })")
            let window = try #require(report.congestion)
            #expect(window.timeoutRule == CongestionWindow.timeoutRule)
            print("stock unbound at 1000: \(report.pairs.filter(\.accepted).count) accepted, window \(window)")
        }
    }

    @Test func gateIsHonest() throws {
        if TestEnvironment.labRequired { try LabGate.labWithBinary.check() }
    }
}
