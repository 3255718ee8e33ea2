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
