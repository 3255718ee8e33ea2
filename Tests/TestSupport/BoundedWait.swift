public import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension Process {
    /// Waits at most `seconds` for the process to exit; true when it did. `waitUntilExit()` has no
    /// limit, and a test that blocks in it outlives its own `.timeLimit` (the limit cannot interrupt a
    /// synchronous wait): a child that misses a signal would hold the whole test run.
    public func waitUntilExit(seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while isRunning, Date() < deadline { usleep(10_000) }
        return !isRunning
    }

    /// Waits at most `seconds`, then kills the process (SIGKILL) and waits for that; false when the
    /// process had to be killed.
    public func waitUntilExitOrKill(seconds: Double) -> Bool {
        if waitUntilExit(seconds: seconds) { return true }
        kill(processIdentifier, SIGKILL)
        _ = waitUntilExit(seconds: 5)
        return false
    }
}
