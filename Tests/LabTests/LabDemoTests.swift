import Foundation
import Reports
import Testing
import TestSupport

/// `make demo` runs `lab demo`: every stage must finish and the index page must show each of them
/// with the numbers the stages wrote.
@Suite(.serialized, .enabled(if: LabGate.labWithBinary.runs, "\(LabGate.labWithBinary.missing ?? "lab tests can run")"))
struct LabDemoTests {
    @Test(.timeLimit(.minutes(3)))
    func theDemoRunsEveryStageAndLinksThemFromItsIndex() throws {
        try LabGate.labWithBinary.check()
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("tp-demo-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: out) }
        let run = try LabFixture.shell([TestEnvironment.binary, "lab", "demo", "--seed", "11", "--out", out, "--quiet"])
        #expect(run.status == 0, "lab demo exited \(run.status)")
        let dir = try RunDirectory.load(out)
        #expect(dir.problems.isEmpty, "\(dir.problems)")
        let manifest = try #require(dir.manifest)
        #expect(manifest.stages.map(\.kind) == [.scan, .path, .trace, .simulate, .verify])
        #expect(manifest.stages.allSatisfy { $0.status == "ok" }, "\(manifest.stages.map { "\($0.kind.rawValue) \($0.status) \($0.note ?? "")" })")
        #expect(dir.reports.map(\.kind) == [.scan, .path, .trace, .simulate, .verify])
        let page = try String(contentsOfFile: out + "/index.html", encoding: .utf8)
        for section in ["scan", "path", "trace", "simulate", "verify"] { #expect(page.contains("<section id=\"\(section)\">")) }
        // The numbers on the page are the stages' own: the trace saw the probes the path run sent.
        let path = try #require(dir.pathReport?.resolvers.first)
        #expect(path.counts.sent >= 4000 && path.loss.up.ratio != nil && path.loss.down.ratio != nil)
        #expect(dir.verifyReport?.verdict == .pass)
        // The lab is gone afterwards.
        let namespaces = try LabFixture.shell(["ip", "netns", "list"]).output
        #expect(!namespaces.contains(manifest.run.vantage.replacingOccurrences(of: "lab ", with: "tp-") + "-"))
    }
}
