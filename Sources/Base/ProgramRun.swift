public import Subprocess

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
