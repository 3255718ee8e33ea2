import Foundation
import OSLayer
import Synchronization

/// How `serve` ends on SIGINT or SIGTERM, whatever state the responder is in.
///
/// The first signal starts an orderly stop (channels closed, answers already queued sent, event
/// loops shut down) and arms a watchdog on a thread of its own, outside Swift's cooperative pool:
/// if the stop has not finished within the grace period the process says so in one line and exits
/// with status 1. A second signal exits at once with 128 + the signal's number. `serve` holds no
/// report to lose, so leaving without the orderly stop loses nothing but the final statistics line.
///
/// Why the watchdog exists: `serve` once took SIGTERM, finished its stop and still did not exit
/// (stop 23). The cause was `ProbeServer.wait()` awaiting a close future after the event loops were
/// gone (fixed: `StopLatch`); a daemon must exit when asked whatever the next such fault is, so the
/// watchdog stays, and its line says which side of the stop it caught.
final class ServeShutdown: Sendable {
    private let stop: @Sendable () async -> Void
    private let grace: Duration
    private let state = Mutex<(signals: Int, finished: Bool)>((0, false))

    /// `stop` is the server's orderly stop (`ProbeServer.stop`, `ForwardingServer.stop`).
    init(grace: Duration, stop: @escaping @Sendable () async -> Void) {
        self.stop = stop
        self.grace = grace
    }

    /// Called by the signal trap, once per signal.
    func signal(_ signo: Int32) {
        let count = state.withLock { state -> Int in
            state.signals += 1
            return state.signals
        }
        guard count == 1 else {
            printErr("tunnelprobe serve: second signal (\(Self.name(signo))), exiting without waiting for the stop")
            ProcessControl.exitNow(128 + signo)
        }
        let grace = grace
        let watchdog = Thread { [self] in
            Thread.sleep(forTimeInterval: Double(grace.components.seconds) + Double(grace.components.attoseconds) / 1e18)
            // Still here: either the stop never returned, or it did and the process's own exit (run
            // from a task of Swift's cooperative pool once the command returns) did not complete.
            if state.withLock({ $0.finished }) {
                printErr("tunnelprobe serve: stopped after \(Self.name(signo)), but the process had not exited \(grace) later; exiting")
                ProcessControl.exitNow(0)
            }
            printErr("tunnelprobe serve: the stop after \(Self.name(signo)) did not finish within \(grace), exiting")
            ProcessControl.exitNow(1)
        }
        watchdog.start()
        Task {
            await stop()
            state.withLock { $0.finished = true }
        }
    }

    private static func name(_ signo: Int32) -> String {
        switch signo {
        case ProcessControl.interruptSignal: "SIGINT"
        case ProcessControl.terminateSignal: "SIGTERM"
        default: "signal \(signo)"
        }
    }
}
