import Foundation

/// The state file `<stateDirectory>/state.json`: the configuration a lab was built from and the
/// daemons it started. `down` does not need it (it works from the names), it only adds the pids
/// of daemons whose namespace is already gone.
struct LabState: Sendable, Codable, Hashable {
    struct Daemon: Sendable, Codable, Hashable {
        var role: String
        var pid: Int32
        /// From /proc/PID/stat, so a reused pid is never taken for the daemon.
        var startTime: UInt64
        var log: String
        /// Which namespace it was started in.
        var namespace: String
    }

    static let version = 1
    var version = LabState.version
    var config: LabConfig
    var daemons: [Daemon] = []
    /// The `lab up` that is building the lab (pid, start time, PID namespace inode) and whether it
    /// finished: a lab whose builder died before `built` is an orphan the next `lab up`/`down`
    /// removes. Labs saved before these fields existed have them nil and are never reclaimed.
    var builderPID: Int32?
    var builderStartTime: UInt64?
    var builderPIDNamespace: UInt64?
    var built: Bool?

    static func directory(name: String, stateRoot: String) -> String {
        (stateRoot.hasSuffix("/") ? String(stateRoot.dropLast()) : stateRoot) + "/" + name
    }

    static func path(directory: String) -> String { directory + "/state.json" }

    static func load(directory: String) -> LabState? {
        guard let text = SystemCalls.readText(path(directory: directory)) else { return nil }
        return try? JSONDecoder().decode(LabState.self, from: Data(text.utf8))
    }

    func save(directory: String) throws(LabError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let text: String
        do {
            text = String(decoding: try encoder.encode(self), as: UTF8.self) + "\n"
        } catch {
            throw LabError(.commandFailed, "cannot encode the lab state: \(error)")
        }
        try SystemCalls.writeFile(LabState.path(directory: directory), text, mode: 0o644)
    }
}

extension LabState {
    /// A build that provably died half-way: not finished, and its builder is gone (no process
    /// with that pid and start time in this PID namespace).
    var isOrphanBuild: Bool {
        guard built == false, let pid = builderPID, let start = builderStartTime, start != 0 else { return false }
        if let recorded = builderPIDNamespace, recorded != SystemCalls.identity("/proc/self/ns/pid")?.inode { return false }
        guard let snapshot = SystemCalls.process(pid) else { return true }
        return !(snapshot.isAlive && snapshot.startTime == start)
    }
}

extension LabState.Daemon {
    /// Alive, and still the process that was started (same start time).
    var isRunning: Bool {
        guard let snapshot = SystemCalls.process(pid) else { return false }
        return snapshot.isAlive && snapshot.startTime == startTime
    }
}
