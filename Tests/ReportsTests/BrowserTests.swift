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

        // Issue 27: every text of every chart lies inside its SVG's viewBox, measured by Chromium's own
        // layout (getBBox in user units). A copy of the page without the CSP line gets a script that
        // writes what it measured into the DOM, which --dump-dom prints; the long-label charts of
        // HTMLReportTests come along.
        let page = try String(contentsOfFile: "\(dir)/index.html", encoding: .utf8)
        let measured = page.replacingOccurrences(of: "<meta http-equiv=\"Content-Security-Policy\"", with: "<meta name=\"csp-removed-for-measuring\"")
            .replacingOccurrences(of: "</body>", with: HTMLReportTests.longLabelCharts().map(\.svg).joined() + Self.measureScript + "</body>")
        try measured.write(toFile: "\(dir)/measure.html", atomically: true, encoding: .utf8)
        let boxes = try Self.run(["--dump-dom", "file://\(dir)/measure.html"])
        #expect(boxes.status == 0)
        let charts = Self.between(boxes.stdout, "<pre id=\"measured\">", "</pre>")
        let outside = Self.between(boxes.stdout, "<pre id=\"outside\">", "</pre>")
        print("chart texts measured in Chromium: \(charts ?? "none")")
        #expect((Int(charts ?? "") ?? 0) >= RunPageTests.chartIDs.count + HTMLReportTests.longLabelCharts().count, "charts measured: \(charts ?? "none")")
        #expect(outside == "", "texts outside their chart: \(outside ?? "no result")")

        let screenshot = try Self.run(["--screenshot=\(shot)", "--window-size=412,6000", url])
        #expect(screenshot.status == 0)
        let size = (try? FileManager.default.attributesOfItem(atPath: shot)[.size] as? Int) ?? 0
        #expect(size > 10_000, "screenshot \(shot) is \(size) bytes")
        #expect(!screenshot.stderr.contains(":CONSOLE"))
    }

    /// Measures every `<text>` of every chart against its viewBox (0.5 units of slack for rounding).
    static let measureScript = """
        <script>
        const out = [];
        const charts = document.querySelectorAll("svg.chart");
        for (const svg of charts) {
          const vb = svg.viewBox.baseVal;
          for (const t of svg.querySelectorAll("text")) {
            const b = t.getBBox();
            if (b.x < vb.x - 0.5 || b.y < vb.y - 0.5 || b.x + b.width > vb.x + vb.width + 0.5 || b.y + b.height > vb.y + vb.height + 0.5) {
              out.push(svg.id + ": \\"" + t.textContent + "\\" at x " + b.x.toFixed(1) + ".." + (b.x + b.width).toFixed(1) + " of " + vb.width);
            }
          }
        }
        const a = document.createElement("pre"); a.id = "measured"; a.textContent = String(charts.length); document.body.appendChild(a);
        const o = document.createElement("pre"); o.id = "outside"; o.textContent = out.join("; "); document.body.appendChild(o);
        </script>
        """

    static func between(_ text: String, _ start: String, _ end: String) -> String? {
        guard let a = text.range(of: start), let b = text.range(of: end, range: a.upperBound..<text.endIndex) else { return nil }
        return String(text[a.upperBound..<b.lowerBound])
    }
}

