// The executable is only this: every command lives in TunnelprobeCommands, where tests and the
// fuzz targets (Fuzz/) reach them in process. `TunnelProbe.execute` parses, runs and maps errors to
// the exit status; this adds only the process around it (its arguments, its streams, `exit`).
import Foundation
import TunnelprobeCommands

@main
enum EntryPoint {
    static func main() async {
        let argv = CommandLine.arguments
        let status = await TunnelProbe.execute(Array(argv.dropFirst()), programName: argv.first ?? "tunnelprobe")
        exit(status)
    }
}
