import Base
import DNSWire
import Results

extension UplinkPacket {
    /// Decodes an Ethernet frame (the veth's link type) and classifies it against the carrier.
    static func decode(_ frame: [UInt8], atMs: Int, carriers: [Endpoint], carrierDomain: String?) -> UplinkPacket {
        var packet = UplinkPacket(atMs: atMs, kind: .other, length: frame.count)
        guard frame.count >= 14 else { return packet }
        let etherType = UInt16(frame[12]) << 8 | UInt16(frame[13])
        let ip = Array(frame[14...])
        var payload: ArraySlice<UInt8> = []
        var proto: UInt8 = 0
        switch etherType {
        case 0x0806:
            packet.kind = .linkControl
            packet.transport = "arp"
            return packet
        case 0x0800:
            guard ip.count >= 20, ip[0] >> 4 == 4 else { return packet }
            let headerLength = Int(ip[0] & 0x0f) * 4
            guard headerLength >= 20, ip.count >= headerLength else { return packet }
            packet.family = 4
            packet.source = IPAddress(bytes: ip[12..<16])?.description
            packet.destination = IPAddress(bytes: ip[16..<20])?.description
            proto = ip[9]
            payload = ip[headerLength...]
            packet.kind = .ipv4
        case 0x86DD:
            guard ip.count >= 40, ip[0] >> 4 == 6 else { return packet }
            packet.family = 6
            packet.source = IPAddress(bytes: ip[8..<24])?.description
            packet.destination = IPAddress(bytes: ip[24..<40])?.description
            proto = ip[6]
            var offset = 40
            // Hop-by-hop options (MLD reports carry Router Alert, RFC 2711).
            if proto == 0, ip.count >= offset + 8 {
                proto = ip[offset]
                offset += (Int(ip[offset + 1]) + 1) * 8
            }
            payload = offset <= ip.count ? ip[offset...] : []
            packet.kind = .ipv6
        default:
            packet.transport = "ethertype 0x\(String(etherType, radix: 16))"
            return packet
        }
        let bytes = Array(payload)
        switch proto {
        case 6, 17:
            packet.transport = proto == 6 ? "tcp" : "udp"
            if bytes.count >= 4 {
                packet.sourcePort = Int(bytes[0]) << 8 | Int(bytes[1])
                packet.destinationPort = Int(bytes[2]) << 8 | Int(bytes[3])
            }
            if proto == 17, packet.destinationPort == 53, bytes.count > 8 {
                if let message = try? DNSMessage(parsing: Array(bytes[8...])), let question = message.questions.first {
                    packet.query = "\(question.type) \(question.name)"
                } else if let name = DNSMessage.firstQuestionName(ignoringLengthLimit: Array(bytes[8...])) {
                    // A name past 255 octets (MasterDnsVPN's Python client probes its upload limit
                    // with them): no DNS name, but still whose query it is.
                    packet.query = "over-long \(name)"
                }
            }
        case 1:
            packet.transport = "icmp"
            // Destination unreachable sent back to a carrier peer (its packets reached a dead
            // engine's port): the kernel's answer to the carrier, not traffic of its own (RFC 792).
            if bytes.first == 3, carriers.contains(where: { $0.host == packet.destination }) {
                packet.kind = .carrier
                return packet
            }
        case 58:
            packet.transport = "icmpv6"
            // Router/neighbour solicitation and advertisement, redirect (RFC 4861 4), MLDv1/v2 (RFC 3810).
            if let type = bytes.first, (133...137).contains(type) || type == 143 || (130...132).contains(type) {
                packet.kind = .linkControl
                return packet
            }
        default:
            packet.transport = "ip proto \(proto)"
        }
        // UDP to a carrier; TCP too when the carrier is not plain DNS (dnstt's DoT and DoH
        // resolvers, ports 853 and 443): on port 53 a TCP query is DNS of its own.
        let isCarrier = carriers.contains { carrier in
            carrier.host == packet.destination && Int(carrier.port) == packet.destinationPort
                && (packet.transport == "udp" || (packet.transport == "tcp" && carrier.port != 53))
        }
        if isCarrier {
            if let domain = carrierDomain, packet.destinationPort == 53 {
                // For a DNS tunnel only queries under its domain are the carrier; the same resolver
                // asked for another name is a leak.
                let name = packet.query.map { String($0.split(separator: " ").last ?? "").lowercased() } ?? ""
                let trimmed = name.hasSuffix(".") ? String(name.dropLast()) : name
                if trimmed == domain || trimmed.hasSuffix("." + domain) {
                    packet.kind = .carrier
                    return packet
                }
            } else {
                packet.kind = .carrier
                return packet
            }
        }
        if packet.destinationPort == 53 || packet.destinationPort == 853 { packet.kind = .dns }
        return packet
    }
}
