import Base
import Foundation
import Glibc
import OSLayer
import SystemPackage
import Testing

/// OSLayer's sockets, locks and directories on loopback and a temporary directory only.
@Suite struct BlockingSocketTests {
    /// A TCP listener on 127.0.0.1 with a kernel-chosen port (the test's own peer).
    static func listener() throws -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        try #require(fd >= 0)
        let loopback = try #require(IPSocketAddress(ipv4: "127.0.0.1", port: 0))
        try #require(loopback.withSockaddr { bind(fd, $0, $1) } == 0)
        try #require(listen(fd, 4) == 0)
        var bound = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &bound) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return (fd, IPSocketAddress(bound).port)
    }

    /// Bytes sent with `sendAll` arrive whole and in order, and `receiveExactly` reads exactly them;
    /// the end of the stream is an empty receive.
    @Test(.timeLimit(.minutes(1))) func tcpRoundTrip() throws {
        let (server, port) = try Self.listener()
        defer { close(server) }
        let address = try #require(IPSocketAddress(ipv4: "127.0.0.1", port: port))
        let client = try BlockingSocket.connectTCP(to: address, timeoutMs: 2000)
        let accepted = accept(server, nil, nil)
        try #require(accepted >= 0)
        let peer = BlockingSocket(descriptor: accepted)
        defer { peer.close() }
        let payload = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        // The peer's buffers hold less than the payload: a reader thread drains while the client sends.
        let received = Received()
        let reader = Thread { received.set(peer.receiveExactly(payload.count)) }
        reader.start()
        try client.sendAll(payload)
        client.close()
        #expect(received.wait() == payload)
        #expect(try peer.receive(maximum: 16).isEmpty)
    }

    /// Nothing listens: the connect fails at once with ECONNREFUSED, typed, not after the timeout.
    @Test func connectRefused() throws {
        let (server, port) = try Self.listener()
        close(server)  // the port was just free: nothing listens on it now
        let address = try #require(IPSocketAddress(ipv4: "127.0.0.1", port: port))
        #expect {
            try BlockingSocket.connectTCP(to: address, timeoutMs: 2000)
        } throws: { error in
            guard case .failed(let code) = error as? BlockingSocket.ConnectError else { return false }
            return code == .connectionRefused
        }
    }

    /// A datagram to a bound UDP socket comes back with its source address and port.
    @Test func udpDatagram() throws {
        let any = try #require(IPSocketAddress(ipv4: "127.0.0.1", port: 0))
        let receiver = try BlockingSocket.open(.udp, for: any)
        defer { receiver.close() }
        try receiver.bind(to: any)
        var bound = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &bound) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(receiver.descriptor, $0, &length) } }
        let target = IPSocketAddress(bound)
        let sender = try BlockingSocket.open(.udp, for: target)
        defer { sender.close() }
        #expect(try sender.send([1, 2, 3], to: target) == 3)
        #expect(receiver.wait(for: .readable, timeoutMs: 2000))
        let (bytes, from) = try receiver.receiveDatagram(maximum: 64, dontWait: true)
        #expect(bytes == [1, 2, 3])
        #expect(from.host == "127.0.0.1" && from.port > 0)
        // Nothing more is waiting: a non-blocking receive says so with a typed errno.
        #expect(throws: Errno.self) { try receiver.receiveDatagram(maximum: 64, dontWait: true) }
    }

    /// One holder at a time: a second descriptor cannot take the lock until the first closes.
    @Test func directoryLock() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("oslayer-lock-\(UUID().uuidString)").path
        try SystemCall.makeDirectory(directory, mode: 0o700)
        try SystemCall.makeDirectory(directory, mode: 0o700)  // existing: not an error
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try FileLock.openDirectory(directory)
        let second = try FileLock.openDirectory(directory)
        defer { second.close() }
        #expect(try first.tryLockExclusive())
        #expect(try !second.tryLockExclusive())
        first.close()
        #expect(try second.tryLockExclusive())
        #expect(throws: Errno.self) { try FileLock.openDirectory(directory + "/absent") }
    }

    /// The destination address of an IP_PKTINFO control message, and nil for a truncated one.
    @Test func packetInfoDestination() {
        var control = [UInt8](repeating: 0, count: 32)
        control.withUnsafeMutableBytes { c in
            c.storeBytes(of: 28, toByteOffset: 0, as: Int.self)
            c.storeBytes(of: Int32(IPPROTO_IP), toByteOffset: 8, as: Int32.self)
            c.storeBytes(of: Int32(8), toByteOffset: 12, as: Int32.self)
            c.storeBytes(of: UInt32(0xC613_0203).bigEndian, toByteOffset: 24, as: UInt32.self)
        }
        #expect(PacketInfoSocket.destination(control, length: 32) == 0xC613_0203)
        #expect(PacketInfoSocket.destination(control, length: 8) == nil)
        #expect(PacketInfoSocket.destination([UInt8](repeating: 0, count: 32), length: 32) == nil)
    }
}

/// What the reader thread received, handed to the test when it is done.
private final class Received: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var bytes: [UInt8]?

    func set(_ value: [UInt8]?) {
        bytes = value
        done.signal()
    }

    func wait() -> [UInt8]? {
        done.wait()
        return bytes
    }
}
