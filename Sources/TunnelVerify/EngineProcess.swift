import Base
import OSLayer
import Foundation
import Synchronization

/// A running engine, started through swift-subprocess inside the sandbox with its output in a
/// log file. `sh -c 'exec ...'` and `ip netns exec` both exec in place, so the process
/// swift-subprocess waits for is the engine itself and its exit status is the engine's.
final class EngineProcess: Sendable {
    let log: String
    private final class StatusBox: Sendable {
        let value = Mutex<Int32?>(nil)
    }

    private let status = StatusBox()

    var exitStatus: Int32? { status.value.withLock { $0 } }
    /// The log as text, terminal escapes removed (MasterDnsVPN's Python edition colours every line
    /// even into a file); the file itself stays as the engine wrote it.
    var logText: String { Host.readText(log).map(TerminalText.plain) ?? "" }

    init(argv: [String], log: String) {
        self.log = log
        // Unstructured, so cancelling the run does not kill the engine behind the cleanup's back.
        let runner = Task<Int32, Never>.detached { await ProgramRun.runInSession(argv, log: log) }
        let holder = status
        Task.detached {
            let code = await runner.value
            holder.value.withLock { $0 = code }
        }
    }

    /// Waits (bounded) for the exit status to be collected after the engine ended.
    func waitForExit(timeout: Duration) async -> Int32? {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while exitStatus == nil, clock.now < deadline { try? await clock.sleep(for: .milliseconds(10)) }
        return exitStatus
    }
}
