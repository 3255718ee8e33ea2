import Foundation

/// Runs CPU-heavy test work on a thread of its own and awaits it, so a long computation does not
/// hold one of Swift's cooperative threads (two on a two-core machine): in a parallel run, the async
/// tests whose network completions need those threads would otherwise starve and hit their time limits.
public func offCooperativePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        let thread = Thread {
            do { continuation.resume(returning: try body()) } catch { continuation.resume(throwing: error) }
        }
        thread.stackSize = 8 << 20
        thread.start()
    }
}
