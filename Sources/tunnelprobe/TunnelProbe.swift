import ArgumentParser

@main
struct TunnelProbe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tunnelprobe",
        abstract: "Measure DNS-tunnel paths: resolver scan, MTU, lab.",
        subcommands: [ServeCommand.self, ScanCommand.self, LabCommand.self, LoadgenCommand.self, SimulateCommand.self]
    )
}
