import Base
import Reports
import Results
import Testing
@testable import TunnelVerify

struct ResolverFailoverTests {
    let first = Endpoint(address: IPAddress("198.18.0.1")!, port: 53), second = Endpoint(address: IPAddress("198.18.4.1")!, port: 53)

    func query(_ resolver: Endpoint, at: Int, name: String = "abc.t.lab.test.") -> UplinkPacket {
        UplinkPacket(atMs: at, kind: .carrier, family: 4, source: "198.19.0.2", destination: resolver.host, transport: "udp",
                     sourcePort: 40000, destinationPort: Int(resolver.port), query: "NULL \(name)", length: 90)
    }

    @Test func theFirstQueryToAnotherResolverAfterTheOutageIsTheFailover() {
        let packets = [query(first, at: 100), query(second, at: 200), query(first, at: 1000), query(first, at: 1300),
                       query(second, at: 1800, name: "leak.other.test."), query(second, at: 2450), query(second, at: 2500)]
        #expect(ResolverFailover.inUse(Array(packets.prefix(2)) + [query(first, at: 300)], resolvers: [first, second], domain: "t.lab.test") == first)
        let result = ResolverFailover.measure(packets, blocked: first, resolvers: [first, second], domain: "t.lab.test", outageStartMs: 1000)
        #expect(result.failedOver && result.resolver == "198.18.4.1:53" && result.afterMs == 1450)
        // A query for another name is no tunnel query, and queries before the outage do not count.
        #expect(result.queriesAfterStart == ["198.18.0.1:53": 2, "198.18.4.1:53": 2])
    }

    @Test func stayingOnTheDeadResolverIsNoFailover() {
        let packets = [query(first, at: 1100), query(first, at: 2100), query(Endpoint(address: IPAddress("192.0.2.9")!, port: 53), at: 2200)]
        let result = ResolverFailover.measure(packets, blocked: first, resolvers: [first, second], domain: "t.lab.test", outageStartMs: 1000)
        #expect(!result.failedOver && result.resolver == nil && result.afterMs == nil)
        #expect(result.queriesAfterStart == ["198.18.0.1:53": 2])
        #expect(ResolverFailover.inUse([], resolvers: [first, second], domain: "t.lab.test") == nil)
    }

    @Test func reasonsWhenFailoverCannotBeMeasured() {
        #expect(ResolverFailover.notMeasurable(engine: .iodine, carriers: [first], profileResolvers: 1)?.contains("one resolver") == true)
        let iodine = ResolverFailover.notMeasurable(engine: .iodine, carriers: [first], profileResolvers: 2)
        #expect(iodine?.contains("iodine takes a single resolver") == true && iodine?.contains("198.18.0.1:53") == true)
        #expect(ResolverFailover.notMeasurable(engine: .command, carriers: [first, second], profileResolvers: 2) == nil)
    }
}
