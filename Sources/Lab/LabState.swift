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

extension LabState.Daemon {
    /// Alive, and still the process that was started (same start time).
    var isRunning: Bool {
        guard let snapshot = SystemCalls.process(pid) else { return false }
        return snapshot.isAlive && snapshot.startTime == startTime
    }
}
