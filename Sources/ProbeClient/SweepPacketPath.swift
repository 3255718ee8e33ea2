import OSLayer
import Results

/// The sweep's choice of send path (`--send-path`, issue 31): the packet socket when asked for or,
/// with `auto`, when this process may open one (CAP_NET_RAW) and every address of the ranges leaves
/// by one IPv4 route whose next hop is known; the UDP socket otherwise.
extension Sweeper {
    static func openSendPath(_ choice: SweepSendPathChoice, ranges: SweepRanges,
                             sourcePort: UInt16) throws(SweepError) -> (PacketBatchSocket?, SweepSendPathReport) {
        if choice == .udp { return (nil, SweepSendPathReport(requested: choice, used: .udp, reason: "asked for (--send-path udp)")) }
        // auto: not where connections are tracked, as a stateful firewall (INPUT accepting only
        // established flows) would drop the answers to frames it never saw leave.
        if choice == .auto, let tracked = PacketRouteTable.trackedConnections(), tracked > 0 {
            return (nil, SweepSendPathReport(requested: choice, used: .udp,
                                             reason: "the kernel tracks \(tracked) connections here: a stateful firewall may drop answers to probes sent past it (--send-path packet to override)"))
        }
        let unavailable: String
        switch packetSocket(ranges: ranges, sourcePort: sourcePort) {
        case .success(let (socket, route)):
            let hop = route.gateway.map(SweepRanges.describe)
            let mac = route.linkAddress.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined(separator: ":")
            let reason = "packet socket on \(route.interface)" + (hop.map { " via \($0)" } ?? "") + (mac.isEmpty ? "" : " (\(mac))")
                + (choice == .auto ? ": CAP_NET_RAW and one route for every address of the ranges" : ": asked for (--send-path packet)")
                + (socket.bypassesQueueing ? ", queueing discipline bypassed" : "")
            return (socket, SweepSendPathReport(requested: choice, used: .packet, reason: reason, interface: route.interface,
                                                source: SweepRanges.describe(route.source), nextHop: hop))
        case .failure(let why):
            unavailable = why.description
        }
        guard choice == .auto else { throw SweepError(description: "the packet send path cannot be used: \(unavailable)") }
        return (nil, SweepSendPathReport(requested: choice, used: .udp, reason: "the packet path cannot be used: \(unavailable)"))
    }

    private static func packetSocket(ranges: SweepRanges, sourcePort: UInt16) -> Result<(PacketBatchSocket, PacketRoute), PacketRouteUnavailable> {
        guard sourcePort != 0 else { return .failure(PacketRouteUnavailable("the UDP socket's port cannot be read")) }
        let route: PacketRoute
        switch PacketRouteTable.resolve(blocks: ranges.blocks.map { ($0.first, $0.last) }) {
        case .success(let r): route = r
        case .failure(let why): return .failure(why)
        }
        let framing = PacketFraming(framer: IPv4UDPFramer(source: route.source, sourcePort: sourcePort),
                                    interfaceIndex: route.interfaceIndex, linkAddress: route.linkAddress)
        do {
            return .success((try PacketBatchSocket(framing: framing), route))
        } catch {
            let hint = error == .notPermitted || error == .permissionDenied ? " (needs CAP_NET_RAW)" : ""
            return .failure(PacketRouteUnavailable("cannot open a packet socket on \(route.interface): \(error)\(hint)"))
        }
    }
}
