public import Foundation
import Base
import OSLayer
#if canImport(Glibc)
import Glibc
#endif

/// What every test suite needs to know about where it runs: whether lab tests must run (CI), whether
/// golden files are rewritten, and which `tunnelprobe` binary the command tests start.
public enum TestEnvironment {
    /// `TUNNELPROBE_REQUIRE_LAB=1` (CI, `make test`): a lab test that cannot run fails instead of skipping.
    public static let labRequired = ProcessInfo.processInfo.environment["TUNNELPROBE_REQUIRE_LAB"] == "1"

    /// `TUNNELPROBE_QUICK_CHECK=1` (`make check`, the edit loop): every suite behind a lab gate (`LabGate.isLab`)
    /// is disabled, whatever its name; suites that need only the debug binary still run.
    public static let quickCheck = ProcessInfo.processInfo.environment["TUNNELPROBE_QUICK_CHECK"] == "1"

    /// `UPDATE_GOLDEN=1`: golden files are rewritten from what the code renders now (README, "Tests").
    public static let updatesGolden = ProcessInfo.processInfo.environment["UPDATE_GOLDEN"] == "1"

    /// The package's root directory (this file is `Tests/TestSupport/TestEnvironment.swift`).
    public static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The binary the command and lab tests run: `TUNNELPROBE_BIN`, or the release build the Makefile
    /// makes (`.build/release/tunnelprobe`), as users run it.
    public static var binary: String {
        if let bin = ProcessInfo.processInfo.environment["TUNNELPROBE_BIN"], !bin.isEmpty { return bin }
        return packageRoot.appendingPathComponent(".build/release/tunnelprobe").path
    }

    /// `binary` when it exists and is executable.
    public static var binaryIfBuilt: String? { Executables.isExecutable(binary) ? binary : nil }

    public static var isRoot: Bool { geteuid() == 0 }
}

/// Whether a suite that needs root, tools or the built binary can run here. A suite is enabled when
/// it can run or when the lab is required (CI), so under CI a missing requirement is a failure with
/// its reason (`check()`), never a skip.
///
/// `make check` leaves out every suite behind a gate that needs root, a tool (the lab's daemons, an
/// engine, Chromium) or an idle machine (`isLab`), by this gate and not by the suite's name: a renamed
/// or new suite cannot slip into the edit loop or out of it (`TestEnvironment.quickCheck`).
public struct LabGate: Sendable {
    /// Why the suite cannot run here, or nil.
    public let missing: String?
    /// Whether `make check` leaves the suite out: it needs root or tools, or it measures timing and
    /// loss and so needs the release build on an otherwise idle machine.
    public let isLab: Bool

    /// - Parameters:
    ///   - root: the suite needs root (namespaces, veth, port 53, capture).
    ///   - tools: programs with the Debian package that has each.
    ///   - binary: the suite starts the `tunnelprobe` binary.
    ///   - measures: it measures timing or loss (only `make test`, on an idle machine).
    public init(root: Bool = true, tools: [(program: String, package: String)] = [], binary: Bool = false,
                measures: Bool = false) {
        isLab = root || !tools.isEmpty || measures
        if root && !TestEnvironment.isRoot {
            missing = "needs root"
        } else if let tool = tools.first(where: { Executables.locate($0.program) == nil }) {
            missing = "`\(tool.program)` not found: apt-get install \(tool.package)"
        } else if binary && TestEnvironment.binaryIfBuilt == nil {
            missing = "no tunnelprobe binary at \(TestEnvironment.binary): run `make build` or set TUNNELPROBE_BIN"
        } else {
            missing = nil
        }
    }

    /// The lab's own needs: root, iproute2 and unbound.
    public static let lab = LabGate(tools: [("ip", "iproute2"), ("unbound", "unbound")])

    /// For `.enabled(if:)`: false for a lab suite in `make check`; otherwise true when the suite can run
    /// here or must (CI, where a missing need then fails in `check()`).
    public var runs: Bool {
        if isLab && TestEnvironment.quickCheck { return false }
        return missing == nil || TestEnvironment.labRequired
    }

    /// The first line of a gated test: throws the reason when the suite cannot run here.
    public func check() throws {
        if let missing { throw Unavailable(reason: missing) }
    }

    public struct Unavailable: Error, CustomStringConvertible {
        public let reason: String
        public var description: String { "test cannot run here: \(reason)" }
    }
}

/// Golden-file comparison for rendered text (Markdown, HTML, SVG). With `UPDATE_GOLDEN=1` the file is
/// rewritten and the comparison passes; read the diff before committing it.
public enum Golden {
    /// The golden text to compare `rendered` with (the file's content, or `rendered` itself once rewritten).
    public static func expected(_ rendered: String, file: URL) throws -> String {
        if TestEnvironment.updatesGolden {
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try rendered.write(to: file, atomically: true, encoding: .utf8)
            return rendered
        }
        return try String(contentsOf: file, encoding: .utf8)
    }
}

extension LabGate {
    /// Root only (live capture on the test's own loopback).
    public static let root = LabGate()
    /// The `tunnelprobe` binary only (command tests without a lab).
    public static let binary = LabGate(root: false, binary: true)
    /// The binary, on an idle machine: a suite that measures loss or timing without root.
    public static let measurement = LabGate(root: false, binary: true, measures: true)
    /// The lab and the binary that runs in it (scan, path, trace, impair, demo).
    public static let labWithBinary = LabGate(tools: [("ip", "iproute2"), ("unbound", "unbound")], binary: true)
    /// The lab with its tunnel servers and engines (verify, resilience).
    public static let tunnelLab = LabGate(tools: [
        ("ip", "iproute2"), ("nft", "nftables"), ("unbound", "unbound"), ("iodine", "iodine"), ("iodined", "iodine"),
        ("openvpn", "openvpn"), ("wireguard-go", "wireguard-go"), ("wg", "wireguard-tools"), ("nginx", "nginx-light"),
        ("microsocks", "microsocks"),
    ], binary: true)
    /// A headless Chromium for the browser test.
    public static let chromium = LabGate(root: false, tools: [("chromium", "chromium")])
}
