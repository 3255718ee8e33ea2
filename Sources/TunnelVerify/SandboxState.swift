import Foundation

/// `<stateRoot>/<id>/state.json`: what one run's sandbox is made of, saved before anything is
/// created so that `verify --cleanup` can remove what a hard-killed run left behind.
struct SandboxState: Sendable, Codable, Hashable {
    struct Process: Sendable, Codable, Hashable {
        var role: String
        var pid: Int32
        /// From /proc/PID/stat, so a reused pid is never taken for the engine.
        var startTime: UInt64
        var isRunning: Bool { Host.startTime(of: pid) == startTime }
    }

    var id: String
    /// The run that owns the sandbox; `--cleanup` leaves sandboxes of live owners alone.
    var ownerPID: Int32
    var ownerStartTime: UInt64
    /// The named namespace the run was started in (`ip netns identify`), `nil` for an unnamed one.
    var callerNamespace: String?
    /// The value of net.ipv4.ip_forward in the caller's namespace before the run, restored after.
    var forwardingBefore: String?
    var processes: [Process] = []

    static func path(_ directory: String) -> String { directory + "/state.json" }

    static func load(_ directory: String) -> SandboxState? {
        guard let data = FileManager.default.contents(atPath: path(directory)) else { return nil }
        return try? JSONDecoder().decode(SandboxState.self, from: data)
    }

    func save(_ directory: String) throws(VerifyError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        guard let data = try? encoder.encode(self) else { throw VerifyError(.sandboxFailed, "cannot encode the sandbox state") }
        try Host.writeFile(SandboxState.path(directory), String(decoding: data, as: UTF8.self) + "\n")
    }

    var ownerAlive: Bool { Host.startTime(of: ownerPID) == ownerStartTime }
}
