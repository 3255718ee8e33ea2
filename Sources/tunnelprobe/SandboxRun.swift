import ArgumentParser
import Foundation
import Reports
import TunnelVerify

/// What the command needs of a `verify` or `resilience` report to finish the run.
protocol SandboxReport: Encodable, Sendable {
    var run: RunInfo { get set }
    var verdict: String { get set }
    var summaryLine: String { get }
    func markdown() -> String
}

extension VerifyReport: SandboxReport {}
extension ResilienceReport: SandboxReport {}

/// The part `verify` and `resilience` share: preflight errors as exit codes, the report directory,
/// the run under the signal trap, and the report written (also when interrupted) and printed.
enum SandboxRun {
    /// Runs a preflight check; its error becomes one line and the exit code its cause calls for.
    static func preflight(_ check: () throws(VerifyError) -> Void) throws {
        do {
            try check()
        } catch {
            let code: ExitCode = switch error.code {
            case .notRoot: Exit.noPermission
            case .invalidProfile: Exit.badInput
            default: Exit.environment
            }
            throw fail(error.message, code)
        }
    }

    /// Creates the run's report directory, runs `work` (given the run info and the directory's
    /// absolute path) until it ends or a signal cancels it, and writes `<kind>.json` and `<kind>.md`.
    static func execute<Report: SandboxReport>(kind: String, seed: UInt64, out: String?, common: CommonOptions,
                                               _ work: @escaping @Sendable (RunInfo, String) async throws(VerifyError) -> Report)
        async throws {
        let started = Date()
        let runID = ReportWriter.runID(kind: kind, date: started)
        let info = RunInfo(id: runID, version: toolVersion, commandLine: CommandLine.arguments, vantage: hostName(), seed: seed,
                           startedAt: ReportWriter.timestamp(started))
        let directory = out ?? "reports/\(runID)"
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw fail("cannot create \(directory): \(error)", Exit.environment)
        }
        let path = URL(fileURLWithPath: directory).standardizedFileURL.path
        let interruption = Interruption()
        let task = Task { () throws(VerifyError) -> Report in try await work(info, path) }
        let trap = interruption.trap { task.cancel() }
        let result = await task.result
        trap.release()
        var report: Report
        switch result {
        case .success(let value): report = value
        case .failure(let error): throw fail("\(error)", Exit.environment)
        }
        if let reason = interruption.signal {
            report.run.interruption = reason
            report.run.complete = false
            report.verdict = "incomplete"
        }
        try writeRunReport([("\(kind).json", try ReportWriter.json(report)), ("\(kind).md", report.markdown())], to: directory,
                           defaultLocation: out == nil)
        if common.json {
            print(try ReportWriter.json(report), terminator: "")
        } else if !common.quiet {
            print(report.summaryLine + "\nreport: \(directory)/\(kind).md")
        }
        if interruption.happened { throw Exit.interrupted }
        if report.verdict != "pass" { throw Exit.checksFailed }
    }
}
