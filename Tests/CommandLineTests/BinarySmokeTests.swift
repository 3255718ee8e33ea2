import Foundation
import Results
import Testing
import TestSupport

/// The process around `TunnelProbe.execute`: the built binary gets its arguments, writes the error
/// line to its real stderr, exits with the status, and writes its report. One case of each; every
/// other command test runs in process (`InProcess`). Needs the built binary (`TUNNELPROBE_BIN`, the
/// debug build under `make check`); under CI (TUNNELPROBE_REQUIRE_LAB=1) a missing binary fails.
@Suite(.enabled(if: LabGate.binary.runs, "\(LabGate.binary.missing ?? "")"))
struct BinarySmokeTests {
    static func run(_ arguments: [String]) throws -> TestProgram.Outcome {
        try LabGate.binary.check()
        return try TestProgram.run([TestEnvironment.binary] + arguments)
    }

    /// A bad flag value: exactly one line on stderr, nothing on stdout, exit 66, as in process.
    @Test func aBadFlagExits66WithOneLine() async throws {
        let arguments = ["simulate", "--model", "bernoulli:p=1.5", "--out", NSTemporaryDirectory() + "tp-smoke-never"]
        let binary = try Self.run(arguments)
        #expect(binary.status == 66)
        #expect(binary.stderr.hasPrefix("tunnelprobe: error: ") && binary.stderr.contains("p must be in [0, 1]"), "\(binary.stderr)")
        #expect(binary.stderr.split(separator: "\n").count == 1 && binary.stdout.isEmpty, "\(binary.stderr)")
        let inProcess = await InProcess.run(arguments)
        #expect(inProcess.status == binary.status && inProcess.stderr == binary.stderr && inProcess.stdout == binary.stdout)
    }

    /// A good run: exit 0, its summary on stdout, its report on disk recording the binary's own argv.
    @Test func aGoodSimulateRunWritesItsReport() throws {
        let out = NSTemporaryDirectory() + "tp-smoke-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: out) }
        let arguments = ["simulate", "--model", "bernoulli:p=0.02", "--runs", "1", "--opportunities", "2000", "--seed", "7",
                         "--levels", "none,balanced", "--out", out]
        let r = try Self.run(arguments)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(!r.stdout.isEmpty)
        let report = try JSONDecoder().decode(SimulateReport.self, from: Data(contentsOf: URL(fileURLWithPath: out + "/simulate.json")))
        #expect(report.run.commandLine == [TestEnvironment.binary] + arguments && report.run.complete)
        for file in ["simulate.md", "index.html"] {
            #expect(FileManager.default.fileExists(atPath: out + "/" + file), "\(file)")
        }
    }
}
