import Base
import Foundation
import OSLayer

/// What the resilience runner does to a sandbox besides what `verify` does: routes through a
/// given gateway (it changes when the uplink gets a new address), the uplink's link state, a new
/// uplink address, a block of the resolver, and snapshots of what the engine may leave behind.
extension Sandbox {
    /// The uplink's own default routes through `gateway` (a link going down drops them).
    func uplinkRoutes(gateway: String, tools: Tools) async throws(VerifyError) {
        try await Host.check([tools.ip, "-n", namespace, "route", "replace", "default", "via", gateway, "dev", uplink,
                              "metric", "\(Sandbox.uplinkMetric)"])
        _ = try? await Host.run([tools.ip, "-n", namespace, "-6", "route", "replace", "default", "via", hostAddress6, "dev", uplink,
                                 "metric", "\(Sandbox.uplinkMetric)"])
    }

    /// The tunnel's routes with the carriers excluded through `gateway`. With a split, only the
    /// included prefixes (and the resolved addresses of included domains) go into the TUN, or
    /// everything but the excluded ones; IPv6 prefixes likewise through `-6`.
    /// Returns whether IPv6 could be routed into the TUN: a TUN whose MTU is below 1280 has no
    /// IPv6 (RFC 8200 5; iodine's is 1130), and then the IPv6 routes meant for it are blackholes
    /// (fail closed: nothing meant for the tunnel leaves through the uplink).
    @discardableResult
    func tunnelRoutes(carriers: [String], gateway: String, claimIPv6: Bool, split: SplitCheck.Routed?, tools: Tools) async throws(VerifyError) -> Bool {
        var ipv6IntoTunnel = true
        let ip = tools.ip
        for host in Set(carriers).sorted() where !host.contains(":") {
            try await Host.check([ip, "-n", namespace, "route", "replace", host + "/32", "via", gateway, "dev", uplink])
        }
        func family(_ prefix: IPPrefix) -> [String] { prefix.family == 6 ? ["-6"] : [] }
        switch split?.mode {
        case .include?:
            for prefix in split?.prefixes ?? [] {
                let added = try await Host.run([ip, "-n", namespace] + family(prefix) + ["route", "replace", prefix.description, "dev", tunDevice, "metric", "1"])
                guard added.status != 0 else { continue }
                guard prefix.family == 6 else {
                    throw VerifyError(.sandboxFailed, "cannot route \(prefix) into \(tunDevice): \(Host.lastLine(added.error) ?? "status \(added.status)")")
                }
                ipv6IntoTunnel = false
                try await Host.check([ip, "-n", namespace, "-6", "route", "replace", "blackhole", prefix.description, "metric", "1"])
            }
        case .exclude?:
            ipv6IntoTunnel = try await defaultRoutes(claimIPv6: claimIPv6, tools: tools)
            for prefix in split?.prefixes ?? [] {
                let via = prefix.family == 6 ? hostAddress6 : gateway
                try await Host.check([ip, "-n", namespace] + family(prefix) + ["route", "replace", prefix.description, "via", via, "dev", uplink])
            }
        case nil:
            ipv6IntoTunnel = try await defaultRoutes(claimIPv6: claimIPv6, tools: tools)
        }
        return ipv6IntoTunnel
    }

    /// Default IPv4 (and IPv6 when claimed) into the TUN; a blackhole for IPv6 when the TUN
    /// takes no IPv6 route.
    private func defaultRoutes(claimIPv6: Bool, tools: Tools) async throws(VerifyError) -> Bool {
        let ip = tools.ip
        try await Host.check([ip, "-n", namespace, "route", "replace", "default", "dev", tunDevice, "metric", "1"])
        guard claimIPv6 else { return true }
        let added = try await Host.run([ip, "-n", namespace, "-6", "route", "replace", "default", "dev", tunDevice, "metric", "1"])
        guard added.status != 0 else { return true }
        try await Host.check([ip, "-n", namespace, "-6", "route", "replace", "blackhole", "default", "metric", "1"])
        return false
    }

    /// The TUN's MTU as `ip link` reports it.
    func tunMTU(tools: Tools) async -> Int? {
        guard let outcome = try? await Host.run([tools.ip, "-n", namespace, "-o", "link", "show", "dev", tunDevice]) else { return nil }
        let words = outcome.output.split(whereSeparator: \.isWhitespace)
        guard let index = words.firstIndex(of: "mtu"), index + 1 < words.count else { return nil }
        return Int(words[index + 1])
    }

    /// Takes away the routes `tunnelRoutes` set, as a client does on disconnect, so that what
    /// stays behind after a cycle is the engine's own doing.
    func removeTunnelRoutes(carriers: [String], split: SplitCheck.Routed?, tools: Tools) async {
        let ip = tools.ip
        for host in Set(carriers).sorted() where !host.contains(":") {
            _ = try? await Host.run([ip, "-n", namespace, "route", "del", host + "/32"])
        }
        for prefix in split?.prefixes ?? [] {
            let family = prefix.family == 6 ? ["-6"] : []
            _ = try? await Host.run([ip, "-n", namespace] + family + ["route", "del", prefix.description])
            if prefix.family == 6 { _ = try? await Host.run([ip, "-n", namespace, "-6", "route", "del", "blackhole", prefix.description]) }
        }
        _ = try? await Host.run([ip, "-n", namespace, "route", "del", "default", "dev", tunDevice, "metric", "1"])
        _ = try? await Host.run([ip, "-n", namespace, "-6", "route", "del", "default", "metric", "1"])
    }

    /// The device the sandbox routes `address` through, `nil` when there is no route.
    func routeDevice(to address: String, tools: Tools) async -> String? {
        let family = address.contains(":") ? "-6" : "-4"
        guard let outcome = try? await Host.run([tools.ip, "-n", namespace, family, "route", "get", address]), outcome.status == 0 else { return nil }
        let words = outcome.output.split(whereSeparator: \.isWhitespace)
        guard let dev = words.firstIndex(of: "dev"), dev + 1 < words.count else { return nil }
        return String(words[dev + 1])
    }

    func setUplink(up: Bool, tools: Tools) async throws(VerifyError) {
        try await Host.check([tools.ip, "-n", namespace, "link", "set", uplink, up ? "up" : "down"])
    }

    /// Moves the uplink to a fresh /30 in 198.19.0.0/16 (a phone joining another network): the
    /// host end gets the new gateway, NAT covers the new subnet, the old address goes. Returns
    /// the new (gateway, address).
    func changeUplinkAddress(from old: String, tools: Tools) async throws(VerifyError) -> (gateway: String, address: String) {
        var generator = SystemRandomNumberGenerator()
        let a = UInt8.random(in: 0...255, using: &generator), b = UInt8.random(in: 0...63, using: &generator) * 4
        let gateway = "198.19.\(a).\(b &+ 1)", address = "198.19.\(a).\(b &+ 2)", subnet = "198.19.\(a).\(b)/30"
        try await Host.check([tools.ip, "address", "add", gateway + "/30", "dev", hostLink])
        try await Host.check([tools.nft, "add", "rule", "ip", nftTable, "postrouting", "ip", "saddr", subnet,
                              "oifname", "!=", hostLink, "masquerade"])
        try await Host.check([tools.ip, "-n", namespace, "address", "del", old + "/30", "dev", uplink])
        try await Host.check([tools.ip, "-n", namespace, "address", "add", address + "/30", "dev", uplink])
        return (gateway, address)
    }

    /// Drops everything the sandbox sends to `resolver` on its port (the resolver "stops
    /// answering"); the table lives in the sandbox namespace and goes with it.
    func blockResolver(_ resolver: Endpoint, tools: Tools) async throws(VerifyError) {
        let family = resolver.isIPv6 ? "ip6" : "ip"
        let rules = """
            table inet tpvr_\(id) {
                chain output {
                    type filter hook output priority filter; policy accept;
                    \(family) daddr \(resolver.host) udp dport \(resolver.port) drop
                    \(family) daddr \(resolver.host) tcp dport \(resolver.port) drop
                }
            }

            """
        let path = directory + "/resolver-block.nft"
        try Host.writeFile(path, rules)
        try await Host.check([tools.ip, "netns", "exec", namespace, tools.nft, "-f", path])
    }

    func unblockResolver(tools: Tools) async {
        _ = try? await Host.run([tools.ip, "netns", "exec", namespace, tools.nft, "delete", "table", "inet", "tpvr_\(id)"])
    }

    /// What an engine can leave behind in the sandbox: TUN devices, routes, sockets (from the
    /// namespace's /proc/net tables, state and addresses without the kernel's ever-changing
    /// counters) and the processes still in it.
    struct Snapshot: Sendable, Hashable {
        var processes: [String]
        var tunDevices: [String]
        var routes: [String]
        var sockets: [String]
    }

    func snapshot(tools: Tools) async -> Snapshot {
        var processes: [String] = []
        if let inode = Host.inode(namespacePath) {
            for pid in Host.processes(inNamespace: inode) where pid != ProcessControl.currentID {
                let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") ?? Data()
                processes.append("\(pid) " + String(decoding: data.map { $0 == 0 ? 32 : $0 }, as: UTF8.self))
            }
        }
        let links = (try? await Host.run([tools.ip, "-n", namespace, "-o", "link", "show", "type", "tun"]))?.output ?? ""
        let tuns = links.split(separator: "\n").compactMap { line in line.split(separator: ":").dropFirst().first.map { $0.trimmingCharacters(in: .whitespaces) } }
        var routes: [String] = []
        for family in ["-4", "-6"] {
            let text = (try? await Host.run([tools.ip, "-n", namespace, family, "route", "show", "table", "all"]))?.output ?? ""
            // Kernel-made multicast/local IPv6 routes come and go with the link state: not the engine's.
            // The link-state flag is not part of a route.
            routes += text.split(separator: "\n").map { $0.replacingOccurrences(of: " linkdown", with: "") }
                .filter { !$0.hasPrefix("multicast") && !$0.hasPrefix("local fe80") && !$0.hasPrefix("fe80::/64") }
        }
        let sockets = (try? await NamespaceThread.run(in: namespacePath) { () -> [String] in
            var found: [String] = []
            for table in ["tcp", "udp", "tcp6", "udp6", "raw", "raw6"] {
                guard let text = Host.readText("/proc/thread-self/net/\(table)") else { continue }
                for line in text.split(separator: "\n").dropFirst() {
                    let fields = line.split(whereSeparator: \.isWhitespace)
                    // sl local remote st tx:rx tr:when retrnsmt uid timeout inode: a socket no process
                    // holds any more (inode 0: the tool's own probes closing) is the kernel's, not
                    // an engine's.
                    guard fields.count > 9, fields[9] != "0" else { continue }
                    found.append("\(table) \(fields[1]) \(fields[2]) st \(fields[3]) inode \(fields[9])")
                }
            }
            return found
        }) ?? []
        // The engine picks a new TUN address each session (iodine's server hands out the next
        // one): the routes through the TUN are compared with their addresses masked, so a moved
        // address is not taken for an accumulated route, a second one is.
        let masked = routes.map { line in
            guard line.contains("dev \(tunDevice)") else { return line }
            return line.split(separator: " ").map { word in
                IPAddress(word.split(separator: "/").first ?? "")?.version == 4 ? "<addr>" : String(word)
            }.joined(separator: " ")
        }
        return Snapshot(processes: processes.sorted(), tunDevices: tuns.sorted(), routes: masked.sorted(), sockets: sockets.sorted())
    }
}
