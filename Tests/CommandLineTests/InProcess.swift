import Foundation
import Synchronization
import TestSupport
import TunnelprobeCommands

/// `tunnelprobe ARGUMENTS` run in this process through the binary's own entry point
/// (`TunnelProbe.execute`), with what it writes to stdout and stderr recorded instead of printed.
/// The argument list, the exit status and the text are what a user of the binary gets; log lines
/// (swift-log) are not recorded (they go to this process's stderr).
enum InProcess {
    /// The same shape as a program's run (`TestProgram`), so a smoke test compares the two.
    typealias Outcome = TestProgram.Outcome

    static func run(_ arguments: [String]) async -> Outcome {
        let recorded = Recorded()
        let status = await TunnelProbe.execute(arguments, output: recorded.output)
        return Outcome(status: status, stdout: recorded.stdout.withLock { $0 }, stderr: recorded.stderr.withLock { $0 })
    }

    private final class Recorded: Sendable {
        let stdout = Mutex("")
        let stderr = Mutex("")

        var output: CommandOutput {
            CommandOutput(standardOutput: { text in self.stdout.withLock { $0 += text } },
                          standardError: { text in self.stderr.withLock { $0 += text } })
        }
    }

    /// A file holding `text` in a directory of its own under the temporary directory.
    static func temporary(_ name: String, _ text: String) throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tp-cmd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let file = dir.appendingPathComponent(name)
        try text.write(to: file, atomically: true, encoding: .utf8)
        return file.path
    }
}
