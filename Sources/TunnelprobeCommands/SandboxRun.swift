import ArgumentParser
import Foundation
import OSLayer
import Reports
import Results
import Synchronization
import TunnelVerify

/// What the command needs of a `verify` or `resilience` result to finish the run.
protocol SandboxResult: ReportResult {
    var verdict: Verdict { get set }
    var summaryLine: String { get }
    func markdown(run: RunInfo) -> String
}

extension VerifyResult: SandboxResult {}
extension ResilienceResult: SandboxResult {}

/// SIGINT/SIGTERM trapped from the first line of `verify`/`resilience` (before the profile is
/// read) to the end of the run: a signal that arrives before the work starts cancels it as soon
/// as it starts, so the run still ends with a report marked incomplete and exit 130.
final class SignalGate: Sendable {
    let interruption = Interruption()
    private final class Slots: Sendable {
        let value = Mutex<(action: (@Sendable () -> Void)?, trap: SignalTrap?)>((nil, nil))
    }

    private let slots = Slots()

    fileprivate init() {
        let slots = slots
        let trap = interruption.trap {
            let action = slots.value.withLock { $0.action }
            action?()
        }
        slots.value.withLock { $0.trap = trap }
    }

    /// Runs `action` on every later signal, and now when one already came.
    func onSignal(_ action: @escaping @Sendable () -> Void) {
        slots.value.withLock { $0.action = action }
        if interruption.happened { action() }
    }

    func release() {
        let trap = slots.value.withLock { state in
            defer { state = (nil, nil) }
            return state.trap
        }
        trap?.release()
    }
}

/// The part `verify` and `resilience` share: preflight errors as exit codes, the report directory,
/// the run under the signal trap, and the report written (also when interrupted) and printed.
enum SandboxRun {
    private static let gate = Mutex<SignalGate?>(nil)

    /// Installs the run's signal trap once (idempotent); the first line of `verify` and `resilience`.
    @discardableResult
    static func trapSignalsEarly() -> SignalGate {
        gate.withLock { current in
            if let current { return current }
            let made = SignalGate()
            current = made
            return made
        }
    }

    /// Runs a preflight check; its error becomes one line and the exit code its cause calls for.
    static func preflight(_ check: () async throws(VerifyError) -> Void) async throws {
        do {
            try await check()
        } catch {
            let code: ExitCode = switch error.code {
            case .notRoot: Exit.noPermission
            case .invalidProfile: Exit.badInput
            default: Exit.environment
            }
            throw fail(error.message, code)
        }
    }

    /// Creates the run's report directory, runs `work` (given the directory's absolute path) until it
    /// ends or a signal cancels it, and writes its result as `<kind>.json` and `<kind>.md` under the run.
    static func execute<Result: SandboxResult>(kind: String, seed: UInt64, out: String?, common: CommonOptions,
                                               _ work: @escaping @Sendable (String) async throws(VerifyError) -> Result)
        async throws {
        let gate = trapSignalsEarly()
        let run = CommandRun(kind: kind, out: out, interruption: gate.interruption)
        let directory = run.directory
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw fail("cannot create \(directory): \(error)", Exit.environment)
        }
        let path = URL(fileURLWithPath: directory).standardizedFileURL.path
        let task = Task { () throws(VerifyError) -> Result in try await work(path) }
        gate.onSignal { task.cancel() }
        let result = await task.result
        gate.release()
        var outcome: Result
        switch result {
        case .success(let value): outcome = value
        case .failure(let error):
            if run.interruption.happened { throw fail("\(error) (after \(run.interruption.signal ?? "a signal"))", Exit.interrupted) }
            throw fail("\(error)", Exit.environment)
        }
        var info = run.info(seed: seed)
        if info.interruption != nil { outcome.verdict = .incomplete }
        if outcome.verdict == .incomplete {
            info.complete = false
            if info.interruption == nil { info.interruption = "interrupted" }
        }
        let report = ResultDocument(outcome, run: info)
        let json = try ReportWriter.json(report)
        try run.finish(json: json, files: [("\(kind).json", json), ("\(kind).md", outcome.markdown(run: info))],
                       summary: outcome.summaryLine + "\nreport: \(directory)/\(kind).md", common: common)
        try run.exitStatus(failed: outcome.verdict != .pass)
    }
}
