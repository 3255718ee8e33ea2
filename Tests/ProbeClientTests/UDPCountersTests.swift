import Foundation
import ProbeClient
import Testing

@Suite struct UDPCountersTests {
    @Test func readsTheUdpLinesOfProcNetSnmp() throws {
        let text = """
        Ip: Forwarding DefaultTTL
        Ip: 1 64
        Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
        Udp: 1000 3 7 990 5 0 0 0 0
        UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
        UdpLite: 0 0 0 0 0 0 0 0 0
        """
        #expect(UDPCounters.parse(text) == UDPCounters(inErrors: 7, receiveBufferErrors: 5))
        #expect(UDPCounters.parse("Udp: InErrors\nUdp: x") == nil)
        #expect(UDPCounters.parse("") == nil)
    }
}

@Suite struct UDPSocketDropsTests {
    @Test func readsTheDropsColumnOfTheSocketOnAPort() throws {
        let table = """
           sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
          123: 00000000:D431 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 4242 2 0000000000000000 17
          124: 0100007F:0035 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 4243 2 0000000000000000 0
        """
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("udp-\(UUID().uuidString)").path
        try table.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(UDPCounters.socketDrops(port: 0xD431, tables: [path]) == 17)
        #expect(UDPCounters.socketDrops(port: 53, tables: [path]) == 0)
        #expect(UDPCounters.socketDrops(port: 9, tables: [path]) == nil)
    }
}
