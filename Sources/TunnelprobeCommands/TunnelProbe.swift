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
