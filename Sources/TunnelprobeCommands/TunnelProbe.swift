public import ArgumentParser

/// The root command; `Sources/tunnelprobe/EntryPoint.swift` runs it.
public struct TunnelProbe: AsyncParsableCommand {
    public init() {}

    /// Every command, nested ones included, gives its `commandName`: ArgumentParser visits the whole
    /// tree at each start-up, and a name it derives from the type costs a `String(describing:)` with
    /// protocol-conformance scans of the binary (about 2 ms of every run, issue 27).
    public static let configuration = CommandConfiguration(
        commandName: "tunnelprobe",
        abstract: "Measure DNS-tunnel paths: resolver scan and MTU, path quality, captures, FEC/ARQ, tunnel verification.",
        subcommands: [
            ServeCommand.self,
            ScanCommand.self,
            SweepCommand.self,
            RankCommand.self,
            MonitorCommand.self,
            PathCommand.self,
            TraceCommand.self,
            ImpairCommand.self,
            SimulateCommand.self,
            VerifyCommand.self,
            ResilienceCommand.self,
            LabCommand.self,
            ReportCommand.self,
            LoadgenCommand.self,
        ]
    )
}

extension TunnelProbe {
    /// One command line from start to exit status, in this process: what the `tunnelprobe` binary does
    /// (`Sources/tunnelprobe/EntryPoint.swift` calls this with its own arguments and `.process`, then exits
    /// with the status), so that tests run a command in process and see what a user would.
    ///
    /// Parses with ArgumentParser (`asyncParseAsRoot`, as its `main()` does), runs the command, and maps
    /// what it threw as ArgumentParser's `exit(withError:)` would: an `ExitCode` (the commands' `fail`,
    /// which has already written its "tunnelprobe: error: …" line to `output`) is the status as it is; a
    /// usage error (unknown flag, `ValidationError`) is its message and usage on stderr and 64; any other
    /// error is "Error: …" and 1; help and `--version` go to stdout with 0.
    /// - Parameters:
    ///   - arguments: the arguments after the program name.
    ///   - programName: argv[0], recorded with the arguments as a report's `run.commandLine`.
    ///   - output: where the commands' stdout and stderr text goes.
    /// - Returns: the exit status.
    public static func execute(_ arguments: [String], programName: String = "tunnelprobe",
                               output: CommandOutput = .process) async -> Int32 {
        let context = CommandContext(output: output, commandLine: [programName] + arguments)
        return await CommandContext.$current.withValue(context) {
            do {
                var command = try await asyncParseAsRoot(arguments)
                if var asyncCommand = command as? any AsyncParsableCommand {
                    try await asyncCommand.run()
                } else {
                    try command.run()
                }
                return 0
            } catch {
                return exitStatus(for: error, output: output)
            }
        }
    }

    /// The exit status for what a command threw, with its text (if any) written where
    /// `exit(withError:)` writes it: help on stdout, everything else on stderr.
    static func exitStatus(for error: any Error, output: CommandOutput) -> Int32 {
        let code = exitCode(for: error)
        let text = fullMessage(for: error, columns: nil)
        if !text.isEmpty {
            if code.isSuccess { output.standardOutput(text + "\n") } else { output.standardError(text + "\n") }
        }
        return code.rawValue
    }
}
