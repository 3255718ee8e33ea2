import DNSWire
import OSLayer
import ProbeClient
import ProbeProtocol
import Testing

/// The packet send path carries the same probe as the UDP path: the frame's payload, read by the
/// project's own DNS parser, is the sweep's query for that address, and the UDP length covers it.
@Suite struct SweepPacketPathTests {
    @Test func aFramedProbeIsTheSweepQuery() throws {
        let key = try ProbeKey(bytes: Array(repeating: 3, count: 32))
        let sweep = SweepProbe(prober: Prober(engine: QueryEngine(seed: 1), key: key), zone: try DNSName("vpn.sim.test"), salt: 7)
        let target = try #require(SweepRanges.parseIPv4("198.19.4.5"))
        let source = try #require(SweepRanges.parseIPv4("198.18.255.2"))
        let framing = PacketFraming(framer: IPv4UDPFramer(source: source, sourcePort: 33333), interfaceIndex: 1, linkAddress: [2, 0, 0, 0, 0, 1])
        let batch = framing.makeBatch(capacity: 1, payloadSize: 512)
        #expect(batch.append(to: target, port: 53) { sweep.write(for: target, millis: 100, id: 9, into: $0) })
        let frame = Array(batch.outgoing(0))
        let query = try #require(sweep.query(for: target, millis: 100, id: 9))
        #expect(Array(frame[28...]) == query)
        #expect(Int(frame[24]) << 8 | Int(frame[25]) == 8 + query.count)
        let message = try DNSMessage(parsing: Array(frame[28...]))
        #expect(message.header.id == 9 && !message.header.isResponse)
        // The question names the target: an answer echoing it is matched to 198.19.4.5.
        var response = message
        response.header.isResponse = true
        response.edns = nil
        #expect(sweep.match(try response.serialized(), source: target, millis: 120)?.address == "198.19.4.5")
    }
}
