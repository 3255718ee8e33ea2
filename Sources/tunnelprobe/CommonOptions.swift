import ArgumentParser
import Foundation
import Logging

/// Flags every command takes.
struct CommonOptions: ParsableArguments {
    @Flag(name: .long, help: "Print the JSON document to stdout instead of the human summary.")
    var json = false

    @Flag(name: [.short, .long], help: "More log output (debug level).")
    var verbose = false

    @Flag(name: [.short, .long], help: "Only errors; no progress line.")
    var quiet = false

    func logger(_ label: String) -> Logger {
        let level: Logger.Level = verbose ? .debug : (quiet ? .error : .notice)
        var logger = Logger(label: label) { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = level
        return logger
    }

    /// A progress line only on a terminal, and never with --quiet or --json.
    var showsProgress: Bool { !quiet && !json && isatty(STDERR_FILENO) == 1 }
}

/// Exit codes (README, "Exit codes").
enum Exit {
    static let checksFailed = ExitCode(1)
    static let badInput = ExitCode(66)
    static let environment = ExitCode(69)
    static let noPermission = ExitCode(77)
    static let interrupted = ExitCode(130)
}

/// Prints one error line to stderr and returns the exit code to throw.
func fail(_ message: String, _ code: ExitCode) -> ExitCode {
    FileHandle.standardError.write(Data("tunnelprobe: error: \(message)\n".utf8))
    return code
}

func printErr(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

/// SIGINT/SIGTERM handlers that call back once per signal; the default action is restored on release.
final class SignalTrap: @unchecked Sendable {
    private var sources: [any DispatchSourceSignal] = []

    init(_ signals: [Int32] = [SIGINT, SIGTERM], handler: @escaping @Sendable (Int32) -> Void) {
        for sig in signals {
            signal(sig, SIG_IGN)
            // A serial queue of its own gets a thread even while concurrentPerform holds every core.
            let source = DispatchSource.makeSignalSource(signal: sig, queue: DispatchQueue(label: "tunnelprobe.signals"))
            source.setEventHandler { handler(sig) }
            source.resume()
            sources.append(source)
        }
    }

    func release() {
        for s in sources { s.cancel() }
        sources = []
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }
}

let toolVersion = "0.1.0"

func hostName() -> String {
    var buf = [CChar](repeating: 0, count: 256)
    gethostname(&buf, buf.count)
    return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
