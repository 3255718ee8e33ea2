import Base
@testable import Capture
import Foundation
import Synchronization
import Testing
import TestSupport

/// A live capture on the loopback device of the test's own network namespace: root (CAP_NET_RAW)
/// is needed; under CI (TUNNELPROBE_REQUIRE_LAB=1) the test runs and fails without it.
@Suite(.serialized) struct LiveCaptureTests {
    @Test(.enabled(if: LabGate.root.runs, "live capture needs root (CAP_NET_RAW)"), .timeLimit(.minutes(1)))
    func capturesLoopbackUDPAndWritesAPcap() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("tp-live-\(getpid()).pcap").path
        defer { unlink(path) }
        let port = UInt16(40_000 + Int(getpid() % 20_000))
        let seen = Mutex<[DecodedPacket]>([])
        let capture = ProbeCapture.live(
            endpoints: [.init(address: .v4(0x7f00_0001), port: port)], device: "lo", writeTo: path
        ) { packet in seen.withLock { $0.append(packet) } }
        try capture.start()
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        let message: [UInt8] = Array("tunnelprobe".utf8)
        for _ in 0..<3 {
            _ = withUnsafePointer(to: &address) { a in
                a.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, message, message.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        // Immediate mode delivers at once; give the capture thread a moment to see them.
        for _ in 0..<50 where seen.withLock({ $0.count }) < 3 { usleep(20_000) }
        let stats = capture.stop()
        #expect(stats.received == 3)
        #expect(stats.written == 3)
        #expect(stats.decoded == 3)
        let packets = seen.withLock { $0 }
        #expect(packets.count == 3)
        #expect(packets.allSatisfy { $0.destinationPort == port && $0.payload == message && $0.destination.description == "127.0.0.1" })

        let reader = try CaptureFileReader(path: path)
        var decoder = PacketDecoder(linkType: reader.linkType)
        var fromFile = 0
        try reader.forEachFrame { frame, wire, time in
            if decoder.decodePacket(frame, wireLength: wire, timestampNanos: time)?.payload == message { fromFile += 1 }
        }
        #expect(fromFile == 3)
        #expect(capture.stop() == stats)
    }

    @Test(.enabled(if: LabGate.root.runs, "live capture needs root (CAP_NET_RAW)"))
    func aBadFilterOrDeviceIsATypedError() {
        #expect(throws: CaptureError.self) { try LiveCapture(device: "lo", filter: "udp and and").start() }
        do {
            try LiveCapture(device: "tp-no-such-dev0", filter: "udp").start()
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .deviceFailed)
        }
    }

    @Test func theProbeFilterNamesEveryEndpoint() {
        let filter = ProbeCapture.filter(for: [
            .init(address: IPAddress("198.18.0.1")!, port: 53), .init(address: IPAddress("2001:db8::1")!, port: 5353),
            .init(address: IPAddress("198.18.0.1")!, port: 53),
        ])
        #expect(filter.contains("(host 198.18.0.1 and port 53)"))
        #expect(filter.contains("(host 2001:db8::1 and port 5353)"))
        #expect(filter.components(separatedBy: "198.18.0.1 and port 53").count == 2)
    }
}
