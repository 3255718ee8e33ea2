import ArgumentParser
import Foundation
import NIOCore
import OSLayer
import SystemPackage
import Synchronization
import Logging
import Reports

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

    /// The exit code for a socket or system call that failed: 77 when the kernel refused for lack
    /// of privilege (EACCES, EPERM: a port below 1024, a raw socket), 69 for anything else.
    static func forSystemFailure(_ error: any Error) -> ExitCode {
        let errno: Int32? = (error as? IOError)?.errnoCode ?? (error as? Errno)?.rawValue
        return errno == EACCES || errno == EPERM ? noPermission : environment
    }
}

/// Prints one error line ("tunnelprobe: error: MESSAGE") to the run's stderr and returns the exit code
/// to throw; `TunnelProbe.execute` turns the code into the exit status.
func fail(_ message: String, _ code: ExitCode) -> ExitCode {
    printErr("tunnelprobe: error: \(message)")
    return code
}

/// Which signal ended a run early, if one did: the report's `interruption` ("SIGINT", "SIGTERM").
final class Interruption: Sendable {
    private let name = Mutex<String?>(nil)

    var signal: String? { name.withLock { $0 } }
    var happened: Bool { signal != nil }

    /// Traps SIGINT and SIGTERM until `release()`: the first one is noted, then `action` runs (for
    /// example cancelling the task that does the work) on every signal.
    func trap(then action: @escaping @Sendable () -> Void = {}) -> SignalTrap {
        SignalTrap { sig in
            self.name.withLock { $0 = $0 ?? (sig == SIGINT ? "SIGINT" : "SIGTERM") }
            action()
        }
    }
}

let toolVersion = "0.1.0"

func hostName() -> String {
    var buf = [CChar](repeating: 0, count: 256)
    gethostname(&buf, buf.count)
    return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// Colour for people at a terminal only: never when stdout is a pipe or a file, never with NO_COLOR
/// set (https://no-color.org), never with TERM=dumb.
enum Style {
    static let enabled: Bool = {
        let env = ProcessInfo.processInfo.environment
        return isatty(STDOUT_FILENO) == 1 && env["NO_COLOR"].map(\.isEmpty) ?? true && env["TERM"] != "dumb"
    }()

    static func ok(_ text: String) -> String { paint(text, "32") }
    static func bad(_ text: String) -> String { paint(text, "31") }
    static func warn(_ text: String) -> String { paint(text, "33") }
    static func bold(_ text: String) -> String { paint(text, "1") }

    private static func paint(_ text: String, _ code: String) -> String {
        enabled ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text
    }
}

/// A progress line for work whose end is known only as a planned duration: redrawn twice a second on
/// stderr with the elapsed time (and the plan, when there is one), erased when the work ends.
final class ElapsedLine: @unchecked Sendable {
    private let timer: any DispatchSourceTimer
    private let started = Date()

    init(_ label: String, plannedSeconds: Double?) {
        timer = DispatchSource.makeTimerSource(queue: .global())
        timer.schedule(deadline: .now() + 0.5, repeating: 0.5)
        timer.setEventHandler { [started] in
            let elapsed = Date().timeIntervalSince(started)
            let plan = plannedSeconds.map { String(format: " of ~%.0f s", $0) } ?? " s"
            FileHandle.standardError.write(Data(String(format: "\r\u{1B}[K%@: %.1f%@", label, elapsed, plan).utf8))
        }
        timer.resume()
    }

    func finish() {
        timer.cancel()
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }
}
