import Foundation

/// `<stateRoot>/<id>/state.json`: what one run's sandbox is made of, saved before anything is
/// created and again before each step that creates something (`steps`), so that the next run, `lab
/// down` or `verify --cleanup` can remove what a run killed at any moment left behind.
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
    /// The PID namespace (inode) `ownerPID` belongs to; a state from another one is never reclaimed.
    var pidNamespace: UInt64?
    /// What the run was about to create or had created, in order (`netns`, `veth`, `nft`,
    /// `etc-netns`, `tun`, `engine`): each is written before its step runs.
    var steps: [String]?

    static func path(_ directory: String) -> String { directory + "/state.json" }

    static func load(_ directory: String) -> SandboxState? {
        guard let data = FileManager.default.contents(atPath: path(directory)) else { return nil }
        return try? JSONDecoder().decode(SandboxState.self, from: data)
    }

    func save(_ directory: String) throws(VerifyError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        guard let data = try? encoder.encode(self) else { throw VerifyError(.sandboxFailed, "cannot encode the sandbox state") }
        try Host.replaceFile(SandboxState.path(directory), String(decoding: data, as: UTF8.self) + "\n")
    }

    var ownerAlive: Bool { Host.startTime(of: ownerPID) == ownerStartTime }

    /// Provably an orphan: its owner is gone (no process with that pid and start time) in this
    /// PID namespace. A state written in another PID namespace is never taken for one.
    var isOrphan: Bool {
        if let recorded = pidNamespace, recorded != Host.pidNamespace { return false }
        return ownerStartTime != 0 && !ownerAlive
    }

    /// Records `step` and saves, before the step runs.
    mutating func begin(_ step: String, in directory: String) throws(VerifyError) {
        steps = (steps ?? []) + [step]
        try save(directory)
    }
}
