import Base
import OSLayer
import DNSWire
import Foundation
import Results

/// The split-tunnel check: with the engine up, each domain of the split is resolved (A and AAAA)
/// through the sandbox's DNS server as the client would, the split's routes are applied with the
/// resolved addresses as host routes, then a few UDP datagrams go to a destination on each side
/// of the split while both the uplink and the TUN are captured. A tunnelled destination on the
/// uplink in clear, a lookup of a tunnelled name on the uplink in clear, or a direct destination
/// inside the TUN is a misrouted packet and is named (with its domain, when it has one).
enum SplitCheck {
    /// The routes a split comes to once its domains are resolved: the profile's prefixes plus a
    /// host route (/32, /128) per resolved address, and which domain each address belongs to.
    struct Routed: Sendable, Hashable {
        var mode: Profile.Split.Mode
        var prefixes: [IPPrefix]
        /// Resolved address -> the first domain of the split that resolved to it.
        var owners: [String: String]

        init(_ split: Profile.Split, resolved: [String: [String]] = [:]) {
            mode = split.mode
            var prefixes = split.prefixes
            var owners: [String: String] = [:]
            for domain in split.domains {
                for address in resolved[domain] ?? [] {
                    guard let host = IPPrefix(host: address) else { continue }
                    if !prefixes.contains(host) { prefixes.append(host) }
                    let key = host.network.description
                    if owners[key] == nil { owners[key] = domain }
                }
            }
            self.prefixes = prefixes
            self.owners = owners
        }

        func contains(_ address: String) -> Bool { prefixes.contains { $0.contains(address) } }

        /// Whether the split sends `address` through the tunnel.
        func isTunnelled(_ address: String) -> Bool { mode == .include ? contains(address) : !contains(address) }

        var hasIPv6: Bool { prefixes.contains { $0.family == 6 } }
    }

    static func isTunnelled(_ split: Profile.Split, _ address: String) -> Bool { Routed(split).isTunnelled(address) }

    /// Documentation addresses (RFC 5737, RFC 3849) for the side the split does not list.
    static let outsideV4 = ["203.0.113.1", "192.0.2.1", "198.51.100.1"]
    static let outsideV6 = ["2001:db8:ffff::1", "2001:db8:fffe::1", "2001:db8:1::1"]

    /// Destinations on each side: the first host of each prefix, every resolved address, and a
    /// documentation address outside the listed ones per family (IPv6 only when the split
    /// has IPv6 in it).
    static func targets(_ routed: Routed) -> (tunnelled: [String], direct: [String]) {
        let listed = routed.prefixes.map(\.firstHost.description)
        var outside: [String] = []
        if let v4 = outsideV4.first(where: { !routed.contains($0) }) { outside.append(v4) }
        if routed.hasIPv6, let v6 = outsideV6.first(where: { !routed.contains($0) }) { outside.append(v6) }
        return routed.mode == .include ? (listed, outside) : (outside, listed)
    }

    static func targets(_ split: Profile.Split) -> (tunnelled: [String], direct: [String]) { targets(Routed(split)) }

    // MARK: - resolving

    struct Resolution: Sendable, Hashable {
        var server: String?
        var addresses: [String]
        var note: String?
    }

    /// A and AAAA for `domain` from the first of `servers` that answers (as a stub resolver
    /// does, RFC 1034 5.3.1 / resolv.conf order), from inside the sandbox so that the queries
    /// take the sandbox's routes. CNAME chains are followed within the answer section.
    static func resolve(_ domain: String, servers: [String], namespacePath: String, ids: inout SplitMix64) async -> Resolution {
        guard !servers.isEmpty else { return Resolution(server: nil, addresses: [], note: "the profile names no DNS server (dns) to resolve it with") }
        var notes: [String] = []
        for server in servers {
            let a = UInt16(truncatingIfNeeded: ids.next()), aaaa = UInt16(truncatingIfNeeded: ids.next())
            let queries = [DNSQuery.make(id: a, name: domain, type: 1), DNSQuery.make(id: aaaa, name: domain, type: 28)].compactMap { $0 }
            let responses = await SandboxProbes.dnsQueries(queries, server: server, namespacePath: namespacePath, wait: .seconds(2))
            guard !responses.isEmpty else { notes.append("no answer from \(server) within 2 s"); continue }
            var addresses: [String] = []
            var codes: [String] = []
            for id in [a, aaaa] {
                guard let bytes = responses[id] else { continue }
                guard let message = try? DNSMessage(parsing: bytes) else { codes.append("a malformed answer"); continue }
                if message.rcode != .noError { codes.append("\(message.rcode)") }
                addresses += addressesFor(domain, in: message)
            }
            if !addresses.isEmpty { return Resolution(server: server, addresses: addresses, note: nil) }
            let rcodes = codes.isEmpty ? "no A or AAAA records" : codes.joined(separator: ", ")
            return Resolution(server: server, addresses: [], note: "\(server) answered with \(rcodes)")
        }
        return Resolution(server: nil, addresses: [], note: notes.joined(separator: "; "))
    }

    /// The A and AAAA data for `domain` in the answer section, following CNAMEs (RFC 1034 3.6.2).
    static func addressesFor(_ domain: String, in message: DNSMessage) -> [String] {
        var names: Set<String> = [domain.lowercased()]
        for _ in 0..<8 {
            let more = message.answers.compactMap { record -> String? in
                guard case .cname(let target) = record.rdata, names.contains(normalized(record.name)) else { return nil }
                return normalized(target)
            }
            let before = names.count
            names.formUnion(more)
            if names.count == before { break }
        }
        var found: [String] = []
        for record in message.answers where names.contains(normalized(record.name)) {
            switch record.rdata {
            case .a(let bytes) where bytes.count == 4: found.append(IPAddress(bytes: bytes)?.description ?? "?")
            case .aaaa(let bytes) where bytes.count == 16: found.append(IPAddress(bytes: bytes)?.description ?? "?")
            default: break
            }
        }
        var seen = Set<String>()
        return found.filter { seen.insert($0).inserted }
    }

    static func normalized(_ name: DNSName) -> String {
        let text = name.description.lowercased()
        return text.hasSuffix(".") ? String(text.dropLast()) : text
    }

    // MARK: - probing

    /// Three UDP datagrams to port 9 (discard, RFC 863) of each address from inside the sandbox.
    static func send(to addresses: [String], namespacePath: String) async {
        _ = try? await NamespaceThread.run(in: namespacePath) { () -> Bool in
            let payload = Array("tunnelprobe split check".utf8)
            for address in addresses {
                guard let target = SandboxProbes.socketAddress(host: address, port: 9),
                      let socket = try? BlockingSocket.open(.udp, for: target) else { continue }
                for _ in 0..<3 { _ = try? socket.send(payload, to: target, dontWait: true) }
                socket.close()
            }
            return true
        }
    }

    /// A TUN frame (raw IP) with an Ethernet header in front, for the uplink decoder.
    static func ethernet(_ raw: [UInt8]) -> [UInt8] {
        guard let first = raw.first else { return raw }
        let type: [UInt8] = first >> 4 == 6 ? [0x86, 0xdd] : [0x08, 0x00]
        return [UInt8](repeating: 0, count: 12) + type + raw
    }

    // MARK: - verdict

    /// The QNAME of a DNS query packet (`"A name"` -> `name`), lower case, no trailing dot.
    static func queryName(_ packet: UplinkPacket) -> String? {
        guard let query = packet.query, let name = query.split(separator: " ").last else { return nil }
        let lowered = name.lowercased()
        return lowered.hasSuffix(".") ? String(lowered.dropLast()) : lowered
    }

    /// The verdict from both captures. `declared` is what the profile says; `routed` is it with
    /// the domains resolved.
    static func judge(declared: Profile.Split, routed: Routed, domains: [ResilienceResult.Split.Domain],
                      targets: (tunnelled: [String], direct: [String]), uplink: [UplinkPacket], tun: [UplinkPacket],
                      notes: [String] = []) -> ResilienceResult.Split {
        func named(_ packet: UplinkPacket) -> UplinkPacket {
            var copy = packet
            if let destination = packet.destination, let owner = routed.owners[destination] { copy.domain = owner }
            return copy
        }
        let tunnelledDomains = declared.mode == .include ? declared.domains : []
        var clear: [UplinkPacket] = []
        for packet in uplink where packet.kind != .carrier && packet.kind != .linkControl {
            // (c) A lookup of a tunnelled name in clear: the query itself is the misrouted packet.
            if let name = queryName(packet),
               let owner = tunnelledDomains.first(where: { name == $0 || name.hasSuffix("." + $0) }) {
                var copy = packet
                copy.domain = owner
                clear.append(copy)
                continue
            }
            // (a) Traffic to a tunnelled destination in clear.
            if let destination = packet.destination, packet.family == 4 || packet.family == 6, routed.isTunnelled(destination) {
                clear.append(named(packet))
            }
        }
        // (b) Traffic to a direct destination inside the TUN.
        let inside = tun.filter { packet in
            (packet.family == 4 || packet.family == 6) && packet.destination.map { !routed.isTunnelled($0) } == true
        }.map(named)
        let unseen = targets.tunnelled.filter { target in !tun.contains { $0.destination == target } }
            + targets.direct.filter { target in !uplink.contains { $0.destination == target } }
        var allNotes = notes
        for domain in domains where domain.addresses.isEmpty {
            allNotes.append("\(domain.name) did not resolve (\(domain.note ?? "no addresses")): its traffic could not be checked")
        }
        if !unseen.isEmpty {
            allNotes.append("probes not seen on the side they belong to: \(unseen.joined(separator: ", "))")
        }
        let resolvedAll = domains.allSatisfy { !$0.addresses.isEmpty }
        return ResilienceResult.Split(
            mode: declared.mode.rawValue, prefixes: declared.prefixes.map(\.description), domains: domains,
            tunnelledProbes: targets.tunnelled, directProbes: targets.direct, clearOnUplink: clear, insideTunnel: inside,
            unseenProbes: unseen, notes: allNotes, ok: clear.isEmpty && inside.isEmpty && unseen.isEmpty && resolvedAll)
    }
}
