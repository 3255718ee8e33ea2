import Base
import Glibc
import OSLayer
import SystemPackage
import Testing

/// The query engine's batched UDP port, between two ports on loopback.
@Suite struct DatagramPortTests {
    /// The port a socket was bound to.
    static func boundPort(_ fd: Int32) -> Int {
        var bound = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &bound) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return IPSocketAddress(bound).port
    }

    /// Queues `payload` on `port` for 127.0.0.1:`to` (or `host`).
    static func enqueue(_ port: DatagramPort, _ payload: [UInt8], host: String = "127.0.0.1", to: Int) throws {
        let address = try #require(IPSocketAddress(ipv4: host, port: to))
        payload.withUnsafeBytes { bytes in
            address.withSockaddr { name, length in port.enqueue(bytes, name: UnsafeRawPointer(name), nameLength: length) }
        }
    }

    /// 40 datagrams of different sizes queued on one port leave with one flush and arrive whole and
    /// in order, at most `receiveSlots` per receive, each from the sender's address and port; the
    /// `edit` closure changes the queued copy only.
    @Test(.timeLimit(.minutes(1))) func aBatchArrivesWholeAndInOrder() throws {
        let sender = DatagramPort(fd: try DatagramPort.openSocket(ipv6: false, bufferBytes: 1 << 20))
        let receiver = DatagramPort(fd: try DatagramPort.openSocket(ipv6: false, bufferBytes: 1 << 20), receiveSlots: 16)
        let to = Self.boundPort(receiver.fd)
        let payloads = (0..<40).map { i in (0..<(12 + i * 37)).map { UInt8(truncatingIfNeeded: $0 &+ i) } }
        for (i, payload) in payloads.enumerated() {
            let address = try #require(IPSocketAddress(ipv4: "127.0.0.1", port: to))
            payload.withUnsafeBytes { bytes in
                address.withSockaddr { name, length in
                    sender.enqueue(bytes, name: UnsafeRawPointer(name), nameLength: length) { copy in copy[0] = UInt8(i) }
                }
            }
        }
        #expect(sender.queued == 40)
        let flushed = sender.flush()
        #expect(flushed.sent == 40 && flushed.failed.isEmpty && !flushed.blocked)
        #expect(sender.queued == 0)
        var received: [[UInt8]] = []
        var peers: Set<DatagramPeer> = []
        var largest = 0
        for _ in 0..<200 where received.count < 40 {
            let n = receiver.receive { bytes, peer in
                received.append(Array(bytes))
                peers.insert(peer)
            }
            largest = max(largest, n)
            if n == 0 { usleep(1000) }
        }
        #expect(largest <= 16)
        #expect(received.count == 40)
        let expected = payloads.enumerated().map { i, payload in [UInt8(i)] + payload.dropFirst() }
        #expect(received == expected)
        #expect(payloads[5][0] == 5 && payloads[7][0] == 7, "the caller's bytes were changed")
        let from = try #require(IPSocketAddress(ipv4: "127.0.0.1", port: Self.boundPort(sender.fd)))
        var raw = sockaddr_in()
        from.withSockaddr { name, _ in raw = UnsafeRawPointer(name).load(as: sockaddr_in.self) }
        #expect(peers == [DatagramPeer(raw)])
        #expect(receiver.receive { _, _ in } == 0)
    }

    /// A datagram the kernel refuses (to the loopback broadcast address without SO_BROADCAST: EACCES) is
    /// reported with its place in the queue and its errno, and the ones after it are still sent.
    @Test(.timeLimit(.minutes(1))) func aRefusedDatagramIsReportedAndTheRestSent() throws {
        let sender = DatagramPort(fd: try DatagramPort.openSocket(ipv6: false, bufferBytes: 1 << 20))
        let receiver = DatagramPort(fd: try DatagramPort.openSocket(ipv6: false, bufferBytes: 1 << 20))
        let to = Self.boundPort(receiver.fd)
        try Self.enqueue(sender, [1, 1, 1], to: to)
        try Self.enqueue(sender, [2, 2, 2], host: "127.255.255.255", to: to)
        try Self.enqueue(sender, [3, 3, 3], to: to)
        let flushed = sender.flush()
        #expect(flushed.sent == 2)
        #expect(flushed.failed.map(\.index) == [1] && flushed.failed.map(\.errno) == [EACCES])
        var received: [[UInt8]] = []
        for _ in 0..<200 where received.count < 2 {
            if receiver.receive({ bytes, _ in received.append(Array(bytes)) }) == 0 { usleep(1000) }
        }
        #expect(received == [[1, 1, 1], [3, 3, 3]])
    }

    /// A closed port sends and reads nothing, and says so without a system call on a stale descriptor.
    @Test func aClosedPortDoesNothing() throws {
        let port = DatagramPort(fd: try DatagramPort.openSocket(ipv6: false, bufferBytes: 1 << 16))
        try Self.enqueue(port, [1, 2, 3], to: 9)
        port.close()
        #expect(port.fd == -1 && port.queued == 0)
        #expect(port.flush().sent == 0)
        #expect(port.receive { _, _ in } == 0)
    }
}
