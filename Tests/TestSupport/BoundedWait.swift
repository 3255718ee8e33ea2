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

extension Process {
    /// What the kernel says about a child that would not exit: its signal masks and each thread's
    /// state, blocked and pending signals and wait channel (from /proc), for a failing test's message.
    public func procDiagnostics() -> String {
        let base = "/proc/\(processIdentifier)"
        func read(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
        func fields(_ status: String, _ names: [String]) -> String {
            status.split(separator: "\n").filter { line in names.contains { line.hasPrefix($0 + ":") } }
                .map { $0.replacingOccurrences(of: "\t", with: " ") }.joined(separator: " ")
        }
        var lines = ["pid \(processIdentifier): " + fields(read(base + "/status"), ["State", "ShdPnd", "SigIgn", "SigCgt"])]
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: base + "/task")) ?? []
        for task in tasks.sorted() {
            let t = base + "/task/" + task
            lines.append("  \(task) \(read(t + "/comm").trimmingCharacters(in: .whitespacesAndNewlines)): "
                         + fields(read(t + "/status"), ["State", "SigPnd", "SigBlk"]) + " wchan " + read(t + "/wchan"))
        }
        return lines.joined(separator: "\n")
    }
}
