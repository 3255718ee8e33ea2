import Foundation
import NIOConcurrencyHelpers
public import NIOCore
import NIOPosix

/// The user-space netem for UDP: clients send to `listen`, the relay forwards to `upstream` from
/// one socket per client address (like a NAT mapping, closed after `mappingIdleSeconds` without
/// traffic), so answers find their client and the resolver sees distinct sources. Both directions
/// pass through a `DirectionImpairment`, and every decision goes to the log.
///
/// Everything runs on one event loop: the models, the mappings, the log and the delay queue are
/// confined to it, so no lock is taken per datagram.
public final class ImpairRelay: Sendable {
    private let group: MultiThreadedEventLoopGroup
    private let core: RelayCore
    private let stopped = NIOLockedValueBox(false)
    /// Whether `stop()` has finished, and who waits for it.
    private let finished = NIOLockedValueBox<(done: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    /// `log` is written and closed by the relay. Throws when an endpoint is not an address.
    public init(config: ImpairmentConfig, replay: ReplayPlan? = nil, log: ImpairmentLog? = nil, arguments: [String] = []) throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        do {
            core = try RelayCore(config: config, replay: replay, log: log, arguments: arguments, loop: group.next())
        } catch {
            try? group.syncShutdownGracefully()
            throw error
        }
        self.group = group
    }

    /// Binds the listen socket; returns its address (port 0 becomes the real port).
    public func start() async throws -> SocketAddress {
        try await core.start()
    }

    /// Returns when `stop()` has finished.
    public func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = finished.withLockedValue { state in
                if !state.done { state.waiters.append(continuation) }
                return state.done
            }
            if done { continuation.resume() }
        }
    }

    /// Stops reading, closes every socket, writes the summary to the log and closes it. Datagrams
    /// still waiting for their departure are not sent (counted as `unsentAtExit`). Idempotent.
    @discardableResult
    public func stop() async -> ImpairmentSummary {
        let first = stopped.withLockedValue { was in
            defer { was = true }
            return !was
        }
        if first {
            let summary = try? await core.loop.flatSubmit { self.core.shutdown() }.get()
            try? await group.shutdownGracefully()
            let waiters = finished.withLockedValue { state in
                state.done = true
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
            return summary ?? core.lastSummary.withLockedValue { $0 }
        }
        await wait()
        return core.lastSummary.withLockedValue { $0 }
    }

    /// The counts so far (taken on the event loop).
    public func summary() async -> ImpairmentSummary {
        (try? await core.loop.submit { self.core.currentSummary() }.get()) ?? core.lastSummary.withLockedValue { $0 }
    }
}
