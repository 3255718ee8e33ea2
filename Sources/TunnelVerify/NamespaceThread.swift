import OSLayer

/// Runs blocking work on a thread of its own that has entered another network namespace
/// (`NetworkNamespace`, OSLayer), every failure a `VerifyError`.
enum NamespaceThread {
    /// Runs `body` on a new thread inside the namespace at `path` (`/run/netns/NAME`).
    static func run<T: Sendable>(in path: String, _ body: @escaping @Sendable () -> T) async throws(VerifyError) -> T {
        do {
            return try await NetworkNamespace.run(in: path, body)
        } catch {
            switch error {
            case .open(let code): throw VerifyError(.sandboxFailed, "cannot open namespace \(path): \(code)")
            case .enter(let code): throw VerifyError(.sandboxFailed, "cannot enter namespace \(path): \(code)")
            }
        }
    }
}
