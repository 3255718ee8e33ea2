import NIOCore
import NIOPosix
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

/// Binds a UDP channel and a TCP listener on the same port, as both servers listen: with port 0
/// the port the kernel gives UDP may already be taken for TCP, so another one is tried (up to 16).
func bindUDPAndTCP(_ address: SocketAddress, udp bindUDP: (SocketAddress) async throws -> any Channel,
                   tcp bindTCP: (SocketAddress) async throws -> any Channel) async throws -> (udp: any Channel, tcp: any Channel, local: SocketAddress) {
    var attempt = 0
    while true {
        attempt += 1
        let udp = try await bindUDP(address)
        guard let local = udp.localAddress else {
            try? await udp.close()
            throw ChannelError.unknownLocalAddress
        }
        do {
            return (udp, try await bindTCP(local), local)
        } catch {
            try? await udp.close()
            guard address.port == 0, attempt < 16 else { throw error }
        }
    }
}

/// A DNS-over-TCP listener (RFC 7766) as both servers open it: address reuse, a backlog of 1,024,
/// half-closure allowed (a client may close its side after its last query and still read the
/// answers), Nagle off; `make` builds each connection's handler on its event loop.
func listenTCP<Handler: ChannelHandler>(group: any EventLoopGroup, address: SocketAddress,
                                        make: @escaping @Sendable () -> Handler) async throws -> any Channel {
    try await ServerBootstrap(group: group)
        .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
        .serverChannelOption(.backlog, value: 1024)
        .childChannelOption(.allowRemoteHalfClosure, value: true)
        .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
        .childChannelInitializer { channel in
            channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(make()) }
        }
        .bind(to: address).get()
}
