import Foundation

/// Where a command line's text goes: what the commands print to stdout (the summary, the `--json`
/// document, listings) and to stderr (the "tunnelprobe: error: …" and warning lines, ArgumentParser's
/// usage errors and help). The binary gives this process's streams (`.process`); tests in process give
/// their own closures and read what a user would have seen. Log lines (swift-log) and the progress
/// lines on a terminal are not part of it: they always go to this process's stderr.
public struct CommandOutput: Sendable {
    public let standardOutput: @Sendable (String) -> Void
    public let standardError: @Sendable (String) -> Void

    public init(standardOutput: @escaping @Sendable (String) -> Void, standardError: @escaping @Sendable (String) -> Void) {
        self.standardOutput = standardOutput
        self.standardError = standardError
    }

    /// This process's stdout, through Swift's buffered `print` as before, and stderr, unbuffered.
    public static let process = CommandOutput(
        standardOutput: { Swift.print($0, terminator: "") },
        standardError: { FileHandle.standardError.write(Data($0.utf8)) }
    )
}

/// The command line being run (`TunnelProbe.execute`): its output and the argv a report records.
/// Bound for the run's task and its child tasks; outside a run (or on a thread of its own) it is this
/// process's own streams and arguments.
struct CommandContext: Sendable {
    var output: CommandOutput
    /// The program name and arguments, as the reports' `run.commandLine` records them.
    var commandLine: [String]

    @TaskLocal static var current = CommandContext(output: .process, commandLine: CommandLine.arguments)
}

/// One line (or more, `message` may hold newlines) to the run's stderr.
func printErr(_ message: String) {
    CommandContext.current.output.standardError(message + "\n")
}

/// The run's stdout: what `print` was for.
func printOut(_ text: String, terminator: String = "\n") {
    CommandContext.current.output.standardOutput(text + terminator)
}
