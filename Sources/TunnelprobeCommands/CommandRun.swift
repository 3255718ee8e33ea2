import ArgumentParser
import Foundation
import Reports
import Results

/// One run of a command that writes a report, from the moment it starts measuring to its exit
/// status. `scan`, `path`, `trace`, `simulate`, `verify` and `resilience` all go through it, so each
/// keeps only what differs (its flags, its work, its document, its summary):
/// 1. `CommandRun(kind:out:)`: the run's id and report directory (`--out` or `reports/<run-id>`);
/// 2. `measure(onSignal:_:)`: the work runs under the SIGINT/SIGTERM trap; a signal is noted and
///    `onSignal` runs (cancelling the work), so what was measured so far still comes back;
/// 3. `info(seed:vantage:failure:)`: the finished `RunInfo`, marked incomplete with the signal (or
///    the given failure) as its interruption;
/// 4. `finish(json:files:summary:common:)`: the files written and `index.html` rendered, then the
///    document on stdout (`--json`) or the summary;
/// 5. `exitStatus(failed:)`: 130 after a signal, 1 when a check failed, else 0.
final class CommandRun: Sendable {
    let kind: String
    let started: Date
    let runID: String
    let out: String?
    let interruption: Interruption

    init(kind: String, out: String?, interruption: Interruption = Interruption(), started: Date = Date()) {
        self.kind = kind
        self.out = out
        self.interruption = interruption
        self.started = started
        runID = ReportWriter.runID(kind: kind, date: started)
    }

    /// `--out`, or `reports/<run-id>` (whose run also goes into `reports/index.html`).
    var directory: String { out ?? "reports/\(runID)" }

    /// Runs `work` with SIGINT and SIGTERM trapped: the first signal is noted in `interruption`,
    /// then `onSignal` runs on each one. The trap is released however `work` ends.
    func measure<T>(onSignal: @escaping @Sendable () -> Void = {}, _ work: () async throws -> T) async rethrows -> T {
        let trap = interruption.trap(then: onSignal)
        defer { trap.release() }
        return try await work()
    }

    /// The synchronous form of `measure`, for work that polls `interruption.happened`.
    func measure<T>(_ work: () throws -> T) rethrows -> T {
        let trap = interruption.trap()
        defer { trap.release() }
        return try work()
    }

    /// The run's record, finished now. Complete unless a signal came or `failure` (a reason the
    /// run stopped early, such as an unreadable capture) is given.
    func info(seed: UInt64, vantage: String? = nil, failure: String? = nil) -> RunInfo {
        let reason = interruption.signal ?? failure
        return RunInfo(id: runID, version: toolVersion, commandLine: CommandContext.current.commandLine, vantage: vantage ?? hostName(),
                       seed: seed, startedAt: ReportWriter.timestamp(started), finishedAt: ReportWriter.timestamp(),
                       complete: reason == nil, interruption: reason)
    }

    /// Writes `files` into the report directory and renders its `index.html`, then prints `json`
    /// (with `--json`) or `summary` (unless `--quiet`, or when it is nil).
    ///
    /// `recomputable`: the report is a function of the command line and input files that stay where
    /// they are (`trace` of a capture, `simulate` of a model or a fates file, seeded): its files are
    /// written atomically (temporary name, then rename: a reader never sees half a file) without
    /// waiting for the disk, as the pages rendered from them are. A measurement of a network, which
    /// cannot be taken again, is synced to disk before it replaces anything (`ReportWriter.write`);
    /// that fsync took 10-40 ms of a 0.1 s trace run (docs/TRACE.md).
    ///
    /// `written`: the reports among `files` as values, by file name: the page is rendered from them
    /// instead of from the files read back and decoded (a few milliseconds of a 0.1 s `trace`).
    func finish(json: String, files: [(String, String)], summary: @autoclosure () -> String?, common: CommonOptions,
                recomputable: Bool = false, written: [String: ReportDocument] = [:]) throws {
        do { try ReportWriter.write(files, to: directory, durable: !recomputable) } catch { throw fail("\(error)", Exit.environment) }
        // The run's index.html (and reports/index.html for a run in the default place). A rendering
        // problem is a warning: the measured JSON is already on disk.
        for problem in ReportWriter.renderRun(directory: directory, indexRoot: out == nil ? "reports" : nil, written: written) {
            printErr("tunnelprobe: warning: report rendering: \(problem)")
        }
        if common.json {
            printOut(json, terminator: "")
        } else if !common.quiet, let summary = summary() {
            printOut(summary)
        }
    }

    /// Exit 130 after a signal, 1 when `failed`, else return (exit 0).
    func exitStatus(failed: Bool) throws {
        if interruption.happened { throw Exit.interrupted }
        if failed { throw Exit.checksFailed }
    }
}
