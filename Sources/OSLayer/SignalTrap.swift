import Foundation
import Glibc
import Synchronization

/// SIGINT/SIGTERM handlers that call back once per signal; the default action is restored on release.
///
/// The signal is caught by a plain `sigaction` handler that writes its number to a pipe, read by
/// a thread of its own. The handler replaces the default action in one step: there is no moment in
/// which the signal is ignored. (The former trap set SIG_IGN and then armed a libdispatch signal
/// source, which installs its own handler only later, on the manager thread: a signal sent in
/// between was discarded, and `serve` stayed in dispatch_main's sigsuspend for good.)
public final class SignalTrap: Sendable {
    private let token: Int

    public init(_ signals: [Int32] = [ProcessControl.interruptSignal, ProcessControl.terminateSignal], handler: @escaping @Sendable (Int32) -> Void) {
        token = SignalRelay.shared.add(signals: signals, handler: handler)
    }

    public func release() { SignalRelay.shared.remove(token) }
}

/// The write end of the relay's pipe, read by the async-signal-safe handler (a C function cannot
/// capture context). Written once, before any handler is installed.
nonisolated(unsafe) private var signalPipeWrite: Int32 = -1

private let relayHandler: @convention(c) (Int32) -> Void = { signo in
    let saved = errno
    var byte = UInt8(truncatingIfNeeded: signo)
    _ = write(signalPipeWrite, &byte, 1)
    errno = saved
}

/// One pipe and one reader thread for the whole process; traps register and release handlers.
final class SignalRelay: Sendable {
    static let shared = SignalRelay()

    private struct Entry {
        var signals: [Int32]
        var handler: @Sendable (Int32) -> Void
    }

    private let entries = Mutex<(next: Int, table: [Int: Entry])>((0, [:]))

    private init() {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { fatalError("cannot create the signal pipe: \(String(cString: strerror(errno)))") }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        // A full pipe drops a signal's byte instead of blocking the handler.
        _ = fcntl(fds[1], F_SETFL, O_NONBLOCK)
        signalPipeWrite = fds[1]
        let readEnd = fds[0]
        let thread = Thread { [self] in
            var byte: UInt8 = 0
            while true {
                let count = (try? SystemCall.retryingInterrupts { read(readEnd, &byte, 1) }) ?? -1
                guard count == 1 else { return }
                let signo = Int32(byte)
                let handlers = entries.withLock { state in
                    state.table.keys.sorted().compactMap { key in
                        state.table[key].flatMap { $0.signals.contains(signo) ? $0.handler : nil }
                    }
                }
                for handler in handlers { handler(signo) }
            }
        }
        thread.start()
    }

    func add(signals: [Int32], handler: @escaping @Sendable (Int32) -> Void) -> Int {
        entries.withLock { state in
            let token = state.next
            state.next += 1
            state.table[token] = Entry(signals: signals, handler: handler)
            for signo in signals { Self.install(signo, relayHandler) }
            return token
        }
    }

    func remove(_ token: Int) {
        entries.withLock { state in
            guard let entry = state.table.removeValue(forKey: token) else { return }
            let stillTrapped = Set(state.table.values.flatMap(\.signals))
            for signo in entry.signals where !stillTrapped.contains(signo) { Self.install(signo, nil) }
        }
    }

    /// `sigaction` with the relay's handler, or the default action when `handler` is nil.
    private static func install(_ signo: Int32, _ handler: (@convention(c) (Int32) -> Void)?) {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = handler ?? SIG_DFL
        sigemptyset(&action.sa_mask)
        action.sa_flags = SA_RESTART
        sigaction(signo, &action, nil)
    }
}
