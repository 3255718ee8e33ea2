import Base
import OSLayer
import Logging

/// Runs external programs through swift-subprocess and turns every failure into a `LabError`.
enum CommandRunner {
    typealias Outcome = ProgramRun.Outcome

    static func run(_ argv: [String], logger: Logger) async throws(LabError) -> Outcome {
        logger.debug("run", metadata: ["argv": .array(argv.map { .string($0) })])
        do {
            return try await ProgramRun.run(argv)
        } catch {
            throw LabError(.commandFailed, "\(error)")
        }
    }

    /// Runs `argv` and returns its standard output; a non-zero exit throws with its stderr.
    @discardableResult
    static func check(_ argv: [String], logger: Logger) async throws(LabError) -> String {
        let outcome = try await run(argv, logger: logger)
        guard outcome.status == 0 else {
            let reason = lastLine(outcome.error) ?? lastLine(outcome.output) ?? "no output"
            throw LabError(.commandFailed, "`\(display(argv))` failed with status \(outcome.status): \(reason)")
        }
        return outcome.output
    }

    /// Starts `argv` so that it outlives this process (in a session of its own, output appended to
    /// `log`); returns its pid.
    static func launchDetached(_ argv: [String], log: String, logger: Logger) async throws(LabError) -> Int32 {
        logger.debug("launch", metadata: ["argv": .array(argv.map { .string($0) }), "log": "\(log)"])
        do {
            return try await ProgramRun.launchDetached(argv, log: log)
        } catch {
            throw LabError(.startFailed, "cannot launch \(error.program): \(error.reason)")
        }
    }

    /// Runs `argv` with this process's stdin, stdout and stderr; returns its status.
    static func runInheritingStandardIO(_ argv: [String]) async throws(LabError) -> Int32 {
        do {
            return try await ProgramRun.runInheritingStandardIO(argv)
        } catch {
            throw LabError(.commandFailed, "\(error)")
        }
    }

    /// Runs `argv` with stdin from /dev/null and stdout and stderr appended to the file `log`
    /// (created when missing); returns its status.
    static func runLogging(_ argv: [String], to log: String) async throws(LabError) -> Int32 {
        do {
            return try await ProgramRun.runLogging(argv, to: log)
        } catch {
            throw LabError(.commandFailed, "\(error)")
        }
    }

    static func display(_ argv: [String]) -> String { ProgramRun.display(argv) }

    static func lastLine(_ text: String) -> String? { ProgramRun.lastLine(text) }
}

extension String {
    var trimmingWhitespace: String {
        var slice = Substring(self)
        while let first = slice.first, first.isWhitespace { slice.removeFirst() }
        while let last = slice.last, last.isWhitespace { slice.removeLast() }
        return String(slice)
    }
}
