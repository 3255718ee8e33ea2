public import SystemPackage
#if canImport(Glibc)
import Glibc
#endif

/// A socket driven by blocking calls on a thread of its own: what code that entered another network
/// namespace uses (a socket stays in the namespace it was created in, and `setns` changes only the
/// calling thread, so an event loop cannot follow it there). Every call retries EINTR through
/// `SystemCall.retryingInterrupts` and fails with a typed `Errno`.
public struct BlockingSocket: Sendable {
    public enum Kind: Sendable { case tcp, udp }

    public let descriptor: Int32

    public init(descriptor: Int32) { self.descriptor = descriptor }

    /// A new close-on-exec socket of `kind` for the family of `address` (non-blocking when asked).
    public static func open(_ kind: Kind, for address: IPSocketAddress, nonBlocking: Bool = false) throws(Errno) -> BlockingSocket {
        let type = (kind == .tcp ? Int32(SOCK_STREAM.rawValue) : Int32(SOCK_DGRAM.rawValue)) | Int32(SOCK_CLOEXEC.rawValue)
            | (nonBlocking ? Int32(SOCK_NONBLOCK.rawValue) : 0)
        let fd = try SystemCall.retryingInterrupts { socket(address.family, type, 0) }
        return BlockingSocket(descriptor: fd)
    }

    /// Why a bounded connect failed.
    public enum ConnectError: Error, Sendable, CustomStringConvertible {
        /// The socket could not be made.
        case socket(Errno)
        /// The connection was refused or failed (ECONNREFUSED, ENETUNREACH, ...).
        case failed(Errno)
        /// No answer within the timeout.
        case timedOut(milliseconds: Int)

        public var description: String {
            switch self {
            case .socket(let code), .failed(let code): code.description
            case .timedOut(let ms): "no answer within \(ms) ms"
            }
        }
    }

    /// A TCP connection to `address` whose connect is bounded by `timeoutMs` (a non-blocking connect
    /// and poll), then blocking I/O with SO_RCVTIMEO and SO_SNDTIMEO of `timeoutMs`.
    public static func connectTCP(to address: IPSocketAddress, timeoutMs: Int) throws(ConnectError) -> BlockingSocket {
        let socket: BlockingSocket
        do { socket = try open(.tcp, for: address) } catch { throw .socket(error) }
        let fd = socket.descriptor
        var timeout = timeval(tv_sec: timeoutMs / 1000, tv_usec: (timeoutMs % 1000) * 1000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        // A connect interrupted by a signal goes on in the background (connect(2)): wait for it as for EINPROGRESS.
        let started = address.withSockaddr { Glibc.connect(fd, $0, $1) }
        if started != 0 {
            let code = Errno(rawValue: errno)
            guard code == .nowInProgress || code == .interrupted else {
                socket.close()
                throw .failed(code)
            }
            let ready = socket.wait(for: .writable, timeoutMs: timeoutMs)
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
            guard ready, error == 0 else {
                socket.close()
                throw ready ? .failed(Errno(rawValue: error)) : .timedOut(milliseconds: timeoutMs)
            }
        }
        _ = fcntl(fd, F_SETFL, flags)
        return socket
    }

    public enum Readiness: Sendable { case readable, writable }

    /// Waits at most `timeoutMs` for the socket to be readable or writable (`poll`); false on timeout
    /// or error. EINTR ends the wait early, as a timeout: callers poll in a loop against their deadline.
    public func wait(for readiness: Readiness, timeoutMs: Int) -> Bool {
        var poller = pollfd(fd: descriptor, events: Int16(readiness == .readable ? POLLIN : POLLOUT), revents: 0)
        return poll(&poller, 1, Int32(clamping: timeoutMs)) == 1
    }

    /// Sends all of `bytes` on a connected socket, going on after short sends (MSG_NOSIGNAL: a closed
    /// peer is EPIPE, not a signal).
    public func sendAll(_ bytes: [UInt8]) throws(Errno) {
        var offset = 0
        while offset < bytes.count {
            let n = try SystemCall.retryingInterrupts {
                bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            }
            offset += n
        }
    }

    /// At most `maximum` bytes from a connected socket; empty at the end of the stream. A receive
    /// timeout (SO_RCVTIMEO) is `.wouldBlock`/`.resourceTemporarilyUnavailable`.
    public func receive(maximum: Int, dontWait: Bool = false) throws(Errno) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: max(maximum, 1))
        let n = try SystemCall.retryingInterrupts {
            buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, maximum, dontWait ? Int32(MSG_DONTWAIT) : 0) }
        }
        return Array(buffer[0..<n])
    }

    /// Exactly `count` bytes, or nil when the stream ends or fails first.
    public func receiveExactly(_ count: Int) -> [UInt8]? {
        var bytes: [UInt8] = []
        while bytes.count < count {
            guard let chunk = try? receive(maximum: count - bytes.count), !chunk.isEmpty else { return nil }
            bytes += chunk
        }
        return bytes
    }

    /// One datagram to `address`.
    @discardableResult
    public func send(_ bytes: [UInt8], to address: IPSocketAddress, dontWait: Bool = false) throws(Errno) -> Int {
        try SystemCall.retryingInterrupts {
            bytes.withUnsafeBytes { buffer in
                address.withSockaddr { sendto(descriptor, buffer.baseAddress, buffer.count, dontWait ? Int32(MSG_DONTWAIT) : 0, $0, $1) }
            }
        }
    }

    public func bind(to address: IPSocketAddress) throws(Errno) {
        _ = try SystemCall.retryingInterrupts { address.withSockaddr { Glibc.bind(descriptor, $0, $1) } }
    }

    /// One datagram with the IPv4 address it came from (`recvfrom`), EINTR retried.
    public func receiveDatagram(maximum: Int, dontWait: Bool = false) throws(Errno) -> (bytes: [UInt8], from: IPSocketAddress) {
        var buffer = [UInt8](repeating: 0, count: max(maximum, 1))
        let received = buffer.withUnsafeMutableBytes { raw in
            Result { () throws(Errno) in try IPSocketAddress.receive(descriptor, into: raw, flags: dontWait ? Int32(MSG_DONTWAIT) : 0) }
        }
        let (count, source) = try received.get()
        return (Array(buffer[0..<count]), source)
    }

    public func close() { _ = Glibc.close(descriptor) }
}

extension BlockingSocket {
    /// Why a socket could not be made in another network namespace.
    public enum NamespaceError: Error, Sendable {
        case namespace(NetworkNamespace.EntryError)
        case socket(Errno)
    }

    /// A socket created inside the network namespace mounted at `namespacePath`: a short-lived thread
    /// enters it (`NetworkNamespace.runBlocking`), creates the socket and ends; the socket stays there.
    public static func open(_ kind: Kind, for address: IPSocketAddress, nonBlocking: Bool = false,
                            inNamespace namespacePath: String) throws(NamespaceError) -> BlockingSocket {
        let made: Result<BlockingSocket, Errno>
        do {
            made = try NetworkNamespace.runBlocking(in: namespacePath) { () -> Result<BlockingSocket, Errno> in
                Result { () throws(Errno) in try BlockingSocket.open(kind, for: address, nonBlocking: nonBlocking) }
            }
        } catch {
            throw .namespace(error)
        }
        switch made {
        case .success(let socket): return socket
        case .failure(let code): throw .socket(code)
        }
    }
}
