import Base
import SystemPackage
import Logging
import Subprocess

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

    /// Starts `argv` so that it outlives this process: in a session of its own (no terminal
    /// signals), stdin from /dev/null, stdout and stderr appended to `log`. Returns its pid.
    ///
    /// `sh` backgrounds the command and prints `$!`; every program in the chain (`ip netns exec`)
    /// execs in place, so that pid is the daemon's.
    static func launchDetached(_ argv: [String], log: String, logger: Logger) async throws(LabError) -> Int32 {
        let script = #"log="$1"; shift; "$@" </dev/null >>"$log" 2>&1 & echo "$!""#
        var options = PlatformOptions()
        options.createSession = true
        logger.debug("launch", metadata: ["argv": .array(argv.map { .string($0) }), "log": "\(log)"])
        let result: ExecutionResult<Void, StringOutput<UTF8>, StringOutput<UTF8>>
        do {
            result = try await Subprocess.run(
                .path("/bin/sh"),
                arguments: Arguments(["-c", script, "tunnelprobe-lab", log] + argv),
                platformOptions: options,
                output: .string(limit: 4096),
                error: .string(limit: 4096)
            )
        } catch {
            throw LabError(.startFailed, "cannot launch \(argv[0]): \(error)")
        }
        let text = (result.standardOutput).trimmingWhitespace
        guard result.terminationStatus.isSuccess, let pid = Int32(text), pid > 1 else {
            let reason = lastLine(result.standardError) ?? "no pid printed"
            throw LabError(.startFailed, "cannot launch \(argv[0]): \(reason)")
        }
        return pid
    }

    /// Runs `argv` with this process's stdin, stdout and stderr; returns its status.
    static func runInheritingStandardIO(_ argv: [String]) async throws(LabError) -> Int32 {
        do {
            let result = try await Subprocess.run(
                .path(.init(argv[0])),
                arguments: Arguments(Array(argv.dropFirst())),
                input: .currentStandardInput,
                output: .currentStandardOutput,
                error: .currentStandardError
            )
            return exitCode(result.terminationStatus)
        } catch {
            throw LabError(.commandFailed, "cannot run \(display(argv)): \(error)")
        }
    }

    /// Runs `argv` with stdin from /dev/null and stdout and stderr appended to the file `log`
    /// (created when missing); returns its status.
    static func runLogging(_ argv: [String], to log: String) async throws(LabError) -> Int32 {
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(FilePath(log), .writeOnly, options: [.create, .append, .closeOnExec],
                                           permissions: [.ownerReadWrite, .groupRead, .otherRead])
        } catch {
            throw LabError(.commandFailed, "cannot open \(log): \(error)")
        }
        defer { try? file.close() }
        do {
            let result = try await Subprocess.run(
                .path(.init(argv[0])),
                arguments: Arguments(Array(argv.dropFirst())),
                output: .fileDescriptor(file, closeAfterSpawningProcess: false),
                error: .fileDescriptor(file, closeAfterSpawningProcess: false)
            )
            return exitCode(result.terminationStatus)
        } catch {
            throw LabError(.commandFailed, "cannot run \(display(argv)): \(error)")
        }
    }

    static func exitCode(_ status: TerminationStatus) -> Int32 { ProgramRun.exitCode(status) }

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
