import Foundation
import Reports
import Results
import Testing

/// `TunnelProbe.execute`, the binary's whole behaviour short of the process: what each kind of thrown
/// error becomes (exit status, text, stream), and the command line a report records.
struct EntryPointTests {
    /// ArgumentParser's own errors keep its form: "Error: …", the usage, "See '… --help'", exit 64, on stderr.
    @Test func anUnknownFlagIsAUsageErrorOnStderr() async {
        let r = await InProcess.run(["simulate", "--no-such-flag"])
        #expect(r.status == 64)
        #expect(r.stderr.hasPrefix("Error: Unknown option '--no-such-flag'"), "\(r.stderr)")
        #expect(r.stderr.contains("Usage: tunnelprobe simulate") && r.stderr.contains("See 'tunnelprobe simulate --help'"), "\(r.stderr)")
        #expect(r.stdout.isEmpty)
    }

    /// A `ValidationError` from a command's `validate()` (trace's `--tmax 0`) is the same usage form.
    @Test func aValidationErrorIsAUsageError() async {
        let r = await InProcess.run(["trace", "/nonexistent/tp-never.pcap", "--tmax", "0"])
        #expect(r.status == 64)
        #expect(r.stderr.hasPrefix("Error: --tmax must be in (0, 3600] seconds\n") && r.stderr.contains("Usage: tunnelprobe trace"), "\(r.stderr)")
        #expect(r.stdout.isEmpty)
    }

    /// Help is not an error: stdout and exit 0.
    @Test func helpGoesToStdoutWithStatus0() async {
        let r = await InProcess.run(["simulate", "--help"])
        #expect(r.status == 0)
        #expect(r.stdout.contains("USAGE: tunnelprobe simulate") && r.stdout.hasSuffix("\n"), "\(r.stdout)")
        #expect(r.stderr.isEmpty, "\(r.stderr)")
    }

    /// A command's `fail` is one "tunnelprobe: error:" line and its own status, with no usage text.
    @Test func aCommandsFailureIsItsLineAndItsStatus() async {
        let r = await InProcess.run(["report", "render", "/nonexistent/tp-no-such-run"])
        #expect(r.status == 66, "exit \(r.status): \(r.stderr)")
        #expect(r.stderr.hasPrefix("tunnelprobe: error: ") && r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
        #expect(!r.stderr.contains("Usage:"))
    }

    /// The report records the command line it was given, with the program name first (the binary
    /// gives its argv[0]), not the test runner's.
    @Test func theReportRecordsTheCommandLine() async throws {
        let out = NSTemporaryDirectory() + "tp-entry-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: out) }
        let arguments = ["simulate", "--model", "bernoulli:p=0.01", "--runs", "1", "--opportunities", "1000", "--seed", "5",
                         "--levels", "none", "--out", out, "--quiet"]
        let r = await InProcess.run(arguments)
        #expect(r.status == 0, "\(r.stderr)")
        let report = try JSONDecoder().decode(SimulateReport.self, from: Data(contentsOf: URL(fileURLWithPath: out + "/simulate.json")))
        #expect(report.run.commandLine == ["tunnelprobe"] + arguments)
    }
}
