import Foundation
import Reports
import Testing
import TestSupport
import Base
import OSLayer

/// Opens a rendered report in a real headless Chromium: no console errors, every chart present, and a
/// phone-sized screenshot left under `.build/test-output/` for a person to look at.
@Suite(.serialized) struct BrowserTests {
    static let chromium = Executables.locate("chromium") ?? Executables.locate("chromium-browser")
    /// CI installs Chromium (`make deps`) and sets TUNNELPROBE_REQUIRE_LAB=1: there the test must run.
    static let runs = LabGate.chromium.runs

    static func run(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: try #require(chromium, "chromium is not installed (apt-get install chromium)"))
        p.arguments = ["--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
                       "--no-first-run", "--user-data-dir=\(NSTemporaryDirectory())tp-chromium-\(getpid())"] + arguments
        // Files, not pipes: Chromium writes enough to stderr to block on a full pipe.
        let base = NSTemporaryDirectory() + "tp-chromium-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        _ = FileManager.default.createFile(atPath: base + ".out", contents: nil)
        _ = FileManager.default.createFile(atPath: base + ".err", contents: nil)
        defer {
            try? FileManager.default.removeItem(atPath: base + ".out")
            try? FileManager.default.removeItem(atPath: base + ".err")
        }
        p.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: base + ".out"))
        p.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: base + ".err"))
        try p.run()
        p.waitUntilExit()
        let out = (try? String(contentsOfFile: base + ".out", encoding: .utf8)) ?? ""
        let err = (try? String(contentsOfFile: base + ".err", encoding: .utf8)) ?? ""
        return (p.terminationStatus, out, err)
    }

    @Test(.enabled(if: runs, "chromium not installed"), .timeLimit(.minutes(2)))
    func reportOpensWithoutConsoleErrorsAndShowsEveryChart() throws {
        let dir = try HTMLReportTests.tempDirectory("browser")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try RunPageTests.writeAll(to: dir)
        try RunDirectory.load(dir).render()
        let url = "file://\(dir)/index.html"

        let artifacts = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/test-output").path
        try FileManager.default.createDirectory(atPath: artifacts, withIntermediateDirectories: true)
        let shot = artifacts + "/report-phone.png"
        try? FileManager.default.removeItem(atPath: shot)

        let dom = try Self.run(["--dump-dom", url])
        #expect(dom.status == 0)
        for id in RunPageTests.chartIDs {
            #expect(dom.stdout.contains("id=\"\(id)\""), "chart \(id) missing from the DOM")
        }
        let console = dom.stderr.split(separator: "\n").filter { $0.contains(":CONSOLE") }
        #expect(console.isEmpty, "console messages: \(console)")

        let screenshot = try Self.run(["--screenshot=\(shot)", "--window-size=412,6000", url])
        #expect(screenshot.status == 0)
        let size = (try? FileManager.default.attributesOfItem(atPath: shot)[.size] as? Int) ?? 0
        #expect(size > 10_000, "screenshot \(shot) is \(size) bytes")
        #expect(!screenshot.stderr.contains(":CONSOLE"))
    }
}

