import NIOConcurrencyHelpers

/// A server's stop, once: the first caller of `begin()` does the stopping and calls `finish()`;
/// every `wait()` returns when it has. A server must wait on this and not on its channels' close
/// futures: those complete on the event loops, and once the stop has shut the loops down a future
/// not yet awaited can no longer call back (NIO: "Cannot schedule tasks on an EventLoop that has
/// already shut down"), so such a wait never returned and `serve` hung after its stop (stop 23).
final class StopLatch: Sendable {
    private let state = NIOLockedValueBox<(stopping: Bool, done: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, false, []))

    /// True for the first caller only.
    func begin() -> Bool {
        state.withLockedValue { s in
            defer { s.stopping = true }
            return !s.stopping
        }
    }

    var isStopping: Bool { state.withLockedValue { $0.stopping } }

    func finish() {
        let waiters = state.withLockedValue { s in
            s.done = true
            defer { s.waiters = [] }
            return s.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLockedValue { s in
                if !s.done { s.waiters.append(continuation) }
                return s.done
            }
            if done { continuation.resume() }
        }
    }
}
