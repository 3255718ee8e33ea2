import Base
import Results

/// Whether a DNS tunnel moved to another of the profile's resolvers when the one it used went
/// quiet, read from the uplink capture of a resolver outage.
enum ResolverFailover {
    /// The profile resolver a tunnel query (UDP, a question under `domain`) went to; `nil` for
    /// any other packet.
    static func resolver(of packet: UplinkPacket, resolvers: [Endpoint], domain: String) -> Endpoint? {
        guard packet.transport == "udp", let destination = packet.destination, let port = packet.destinationPort,
              let name = SplitCheck.queryName(packet), name == domain || name.hasSuffix("." + domain) else { return nil }
        return resolvers.first { $0.host == destination && $0.port == port }
    }

    /// The resolver that got most tunnel queries in `packets` (the one in use), `nil` when none did.
    static func inUse(_ packets: [UplinkPacket], resolvers: [Endpoint], domain: String) -> Endpoint? {
        var counts: [Endpoint: Int] = [:]
        for packet in packets {
            if let resolver = resolver(of: packet, resolvers: resolvers, domain: domain) { counts[resolver, default: 0] += 1 }
        }
        return resolvers.max { (counts[$0] ?? 0) < (counts[$1] ?? 0) }.flatMap { (counts[$0] ?? 0) > 0 ? $0 : nil }
    }

    /// From the start of the outage on: tunnel queries per resolver, and the first one to a
    /// resolver other than the blocked one.
    static func measure(_ packets: [UplinkPacket], blocked: Endpoint, resolvers: [Endpoint], domain: String,
                        outageStartMs: Int) -> ResilienceResult.Failover {
        var counts: [String: Int] = [:]
        var first: (Endpoint, Int)?
        for packet in packets.sorted(by: { $0.atMs < $1.atMs }) where packet.atMs >= outageStartMs {
            guard let resolver = resolver(of: packet, resolvers: resolvers, domain: domain) else { continue }
            counts[resolver.description, default: 0] += 1
            if resolver != blocked, first == nil { first = (resolver, packet.atMs - outageStartMs) }
        }
        return ResilienceResult.Failover(blockedResolver: blocked.description, failedOver: first != nil, resolver: first?.0.description,
                                         afterMs: first?.1, queriesAfterStart: counts)
    }

    /// Why there is no failover measurement for this engine and profile, `nil` when there is one.
    static func notMeasurable(engine: EngineKind, carriers: [Endpoint], profileResolvers: Int) -> String? {
        if profileResolvers < 2 { return "the profile lists one resolver: there is nothing to fail over to" }
        if carriers.count < 2 {
            let which = carriers.first.map { " (\($0))" } ?? ""
            return "\(engine.rawValue) takes a single resolver on its command line: it was started with the profile's first\(which) and cannot fail over to the other \(profileResolvers - 1)"
        }
        return nil
    }
}
