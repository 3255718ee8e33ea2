// The executable is only this: every command lives in TunnelprobeCommands, where tests and the
// fuzz targets (Fuzz/) reach them in process.
import TunnelprobeCommands

@main
enum EntryPoint {
    static func main() async {
        await TunnelProbe.main()
    }
}
