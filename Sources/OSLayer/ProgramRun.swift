public import Subprocess
import SystemPackage

/// Runs an external program to its end through swift-subprocess and collects what it printed: the
/// one way the lab, verify and resilience run `ip`, `nft` and the like.
public enum ProgramRun {
    public struct Outcome: Sendable, Hashable {
        /// The exit status, or 128 + the signal number as shells report it.
        public var status: Int32
        public var output: String
        public var error: String

        public init(status: Int32, output: String, error: String) {
            self.status = status
            self.output = output
            self.error = error
        }
    }

    /// A program that could not be started at all; `reason` is swift-subprocess's own.
    public struct LaunchError: Error, Sendable, CustomStringConvertible {
        public let program: String
        public let reason: String
        public var description: String { "cannot run \(program): \(reason)" }
    }

    /// Runs `argv` (a full path first) with no standard input and up to 1 MiB of each output kept.
    public static func run(_ argv: [String]) async throws(LaunchError) -> Outcome {
        guard let program = argv.first else { throw LaunchError(program: "", reason: "empty command") }
        do {
            let result = try await Subprocess.run(
                .path(.init(program)),
                arguments: Arguments(Array(argv.dropFirst())),
                output: .string(limit: 1 << 20),
                error: .string(limit: 1 << 20)
            )
            return Outcome(status: exitCode(result.terminationStatus), output: result.standardOutput, error: result.standardError)
        } catch {
            throw LaunchError(program: program, reason: "\(error)")
        }
    }

    /// Starts `argv` so that it outlives this process: in a session of its own (no terminal
    /// signals), stdin from /dev/null, stdout and stderr appended to `log`. Returns its pid.
    ///
    /// `sh` backgrounds the command and prints `$!`; every program in the chain (`ip netns exec`)
    /// execs in place, so that pid is the daemon's. `reason` of the error is the shell's last line.
    public static func launchDetached(_ argv: [String], log: String) async throws(LaunchError) -> Int32 {
        let script = #"log="$1"; shift; "$@" </dev/null >>"$log" 2>&1 & echo "$!""#
        var options = PlatformOptions()
        options.createSession = true
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
            throw LaunchError(program: argv.first ?? "", reason: "\(error)")
        }
        let text = String(result.standardOutput.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
        guard result.terminationStatus.isSuccess, let pid = Int32(text), pid > 1 else {
            throw LaunchError(program: argv.first ?? "", reason: lastLine(result.standardError) ?? "no pid printed")
        }
        return pid
    }

    /// Runs `argv` to its end in a session of its own, stdin from /dev/null, stdout and stderr
    /// appended to `log`, and returns its status. `sh -c 'exec ...'` and `ip netns exec` both exec in
    /// place, so the process waited for is `argv`'s own. A program that cannot start has its reason
    /// written to `log` and status 127, as a shell reports it.
    public static func runInSession(_ argv: [String], log: String) async -> Int32 {
        let script = #"log="$1"; shift; exec "$@" </dev/null >>"$log" 2>&1"#
        var options = PlatformOptions()
        options.createSession = true
        do {
            let result = try await Subprocess.run(
                .path("/bin/sh"),
                arguments: Arguments(["-c", script, "tunnelprobe-engine", log] + argv),
                platformOptions: options,
                output: .discarded,
                error: .discarded
            )
            return exitCode(result.terminationStatus)
        } catch {
            try? AtomicFile.write(log, Array("cannot start: \(error)\n".utf8))
            return 127
        }
    }

    /// Runs `argv` with this process's stdin, stdout and stderr; returns its status.
    public static func runInheritingStandardIO(_ argv: [String]) async throws(LaunchError) -> Int32 {
        guard let program = argv.first else { throw LaunchError(program: "", reason: "empty command") }
        do {
            let result = try await Subprocess.run(
                .path(.init(program)),
                arguments: Arguments(Array(argv.dropFirst())),
                input: .currentStandardInput,
                output: .currentStandardOutput,
                error: .currentStandardError
            )
            return exitCode(result.terminationStatus)
        } catch {
            throw LaunchError(program: display(argv), reason: "\(error)")
        }
    }

    /// Runs `argv` with stdin from /dev/null and stdout and stderr appended to the file `log`
    /// (created when missing); returns its status.
    public static func runLogging(_ argv: [String], to log: String) async throws(LaunchError) -> Int32 {
        guard let program = argv.first else { throw LaunchError(program: "", reason: "empty command") }
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(FilePath(log), .writeOnly, options: [.create, .append, .closeOnExec],
                                           permissions: [.ownerReadWrite, .groupRead, .otherRead])
        } catch {
            throw LaunchError(program: display(argv), reason: "cannot open \(log): \(error)")
        }
        defer { try? file.close() }
        do {
            let result = try await Subprocess.run(
                .path(.init(program)),
                arguments: Arguments(Array(argv.dropFirst())),
                output: .fileDescriptor(file, closeAfterSpawningProcess: false),
                error: .fileDescriptor(file, closeAfterSpawningProcess: false)
            )
            return exitCode(result.terminationStatus)
        } catch {
            throw LaunchError(program: display(argv), reason: "\(error)")
        }
    }

    /// The status as a shell reports it: the exit code, or 128 + N when killed by signal N.
    public static func exitCode(_ status: TerminationStatus) -> Int32 {
        switch status {
        case .exited(let code): Int32(truncatingIfNeeded: code)
        case .signaled(let signal): 128 + Int32(truncatingIfNeeded: signal)
        }
    }

    /// `argv` as one line a person could paste, quoting empty arguments and those with spaces.
    public static func display(_ argv: [String]) -> String {
        argv.map { $0.contains(" ") || $0.isEmpty ? "'\($0)'" : $0 }.joined(separator: " ")
    }

    /// The last non-blank line of a program's output, trimmed.
    public static func lastLine(_ text: String) -> String? {
        text.split(whereSeparator: \.isNewline).last { !$0.allSatisfy(\.isWhitespace) }
            .map { String($0.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed()) }
    }

    /// The line that says why a program stopped: its last `Error:` line (swift-argument-parser
    /// prints the reason there and the usage after it), or else its last non-blank line.
    public static func reasonLine(_ text: String) -> String? {
        let errorLine = text.split(whereSeparator: \.isNewline).last { $0.hasPrefix("Error: ") }
        return errorLine.map { String($0.dropFirst("Error: ".count)) } ?? lastLine(text)
    }
}
