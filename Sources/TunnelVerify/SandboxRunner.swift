/// One run of an engine inside a sandbox (`verify`, `resilience`): what the shared lifecycle in
/// `SandboxRunner.run` needs of it.
protocol SandboxSession {
    associatedtype Outcome
    var sandbox: Sandbox { get }
    var tools: Tools { get }
    var interrupted: Bool { get set }
    /// Notes why the run ended before anything ran (SIGINT while the sandbox was built).
    mutating func noteStopped(_ message: String)
    /// Every phase or scenario of the run.
    mutating func execute() async
    /// What must be undone or saved after `execute`, before the sandbox goes (resilience restores the
    /// uplink and keeps the engine's logs); it runs in a fresh task, so it captures what it needs.
    func afterwards() -> @Sendable () async -> Void
    func report() -> Outcome
}

extension SandboxSession {
    func afterwards() -> @Sendable () async -> Void { {} }
}

/// The one lifecycle of a sandboxed run: build the sandbox (an interruption while it is built ends the
/// run with an incomplete result and nothing left), run the session, then undo in a fresh task, so
/// that cleanup never sees the cancellation that may have ended the run.
enum SandboxRunner {
    static func run<Session: SandboxSession>(_ start: Session, dnsServers: [String]) async throws(VerifyError) -> Session.Outcome {
        var session = start
        let sandbox = session.sandbox, tools = session.tools
        do {
            try await sandbox.create(dnsServers: dnsServers, tools: tools)
        } catch where error.code == .interrupted {
            session.interrupted = true
            session.noteStopped(error.message)
            return session.report()
        }
        await session.execute()
        let undo = session.afterwards()
        await Task.detached { await undo(); await sandbox.destroy(tools: tools) }.value
        return session.report()
    }
}
