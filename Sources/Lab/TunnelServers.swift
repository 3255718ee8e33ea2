import Base
import Foundation
import Logging

/// The tunnel server side of a lab, built when `LabConfig.tunnelDomain` is set:
///
/// ```
/// server ns tp-N-srv                                internet ns tp-N-net
///   198.18.1.3 on tp-N-s: iodined (the resolver        198.18.2.2 on tp-N-n:
///   delegates the tunnel domain here), OpenVPN           nginx answering with the caller's
///   :1194 (static key), wireguard-go :51820              address, unbound (the tunnel's DNS)
///   tunnels 198.18.8/24 iodine, .9/24 OpenVPN,        <- 198.18.2.1 on tp-N-sn, NAT (masquerade)
///   .10/24 WireGuard
/// ```
/// Every tunnel exits at 198.18.2.1. The client namespace reaches 198.18.1.3 through the resolver
/// namespace (forwarding on) for OpenVPN and WireGuard; iodine goes through unbound on 198.18.0.1.
public struct LabTunnelServers: Sendable, Codable, Hashable {
    public var domain: String
    /// The resolver the client sends iodine's queries to (the lab's unbound).
    public var resolver: String
    public var iodinePasswordFile: String
    public var openvpnRemote: String
    public var openvpnKeyFile: String
    public var openvpnClientAddress: String
    public var openvpnServerAddress: String
    public var wireguardEndpoint: String
    public var wireguardClientKeyFile: String
    public var wireguardServerPublicKey: String
    public var wireguardClientAddress: String
    /// nginx in the internet namespace: `GET /` answers with the caller's address.
    public var whoamiURL: String
    /// nginx in the internet namespace: `GET /bulk` answers with `bulkBytes` bytes that do not
    /// compress (seeded SplitMix64 output; iodine compresses what it carries), for `scan --e2e`.
    /// nil in labs made before it.
    public var bulkURL: String?
    public var bulkBytes: Int?
    /// The address every tunnel exits at, as the internet namespace sees it.
    public var exitAddress: String
    /// A resolver reachable only through the tunnels (in the internet namespace).
    public var tunnelDNS: String
    /// Ready `verify` / `resilience` / `scan --e2e` profiles (docs/VERIFY.md), one per engine the lab
    /// runs: engine name to the file in the lab's state directory. nil in labs made before them.
    public var profiles: [String: String]?
    /// dnstt-server (when the lab runs it): its domain, its public key (hex) and key file, its `-mtu`.
    /// Its upstream is microsocks on the server namespace's loopback, so the client's listener is a
    /// SOCKS5 proxy.
    public var dnsttDomain: String?
    public var dnsttPublicKey: String?
    public var dnsttPublicKeyFile: String?
    public var dnsttMTU: Int?
}

enum TunnelServers {
    static let listenAddress = "198.18.1.3"
    static let internetServerSide = "198.18.2.1"
    static let internetAddress = "198.18.2.2"
    static let iodineNetwork = "198.18.8.1/24"
    static let openvpnServer = "198.18.9.1", openvpnClient = "198.18.9.2"
    static let wireguardServer = "198.18.10.1/24", wireguardClient = "198.18.10.2/24"
    static let openvpnPort = 1194, wireguardPort = 51820
    /// dnstt-server's address (UDP 53) and its upstream, microsocks on the server namespace's loopback.
    static let dnsttAddress = "198.18.1.4"
    static let dnsttUpstream = ("127.0.0.1", 1080)
    /// dnstt-server's `-mtu` when the resolver has no UDP limit: dnstt's default.
    static let dnsttDefaultMTU = 1232
    /// The size of nginx's `/bulk` answer: 1 MiB, more than any bulk download in the tests reads.
    static let bulkBytes = 1 << 20
    /// Behind the responder (`LabConfig.tunnelBehindResponder`): iodined moved to this port of the
    /// server address, where `serve --forward` relays what is not a probe.
    static let forwardedPort = 5300
    static var forwardedIodine: String { "\(LabTopology.serverAddress):\(forwardedPort)" }

    static func internetNamespace(_ name: String) -> String { "tp-\(name)-net" }
    static func serverInternetLink(_ name: String) -> String { "tp-\(name)-sn" }
    static func internetLink(_ name: String) -> String { "tp-\(name)-n" }
    static func openvpnDevice(_ name: String) -> String { "tp-\(name)-ov" }
    /// Unique per lab: wireguard-go's control sockets in /var/run/wireguard are machine-wide.
    static func wireguardDevice(_ name: String) -> String { "tp-\(name)-wg" }
    static func file(_ directory: String) -> String { directory + "/tunnel.json" }

    static func load(directory: String) -> LabTunnelServers? {
        guard let text = SystemCalls.readText(file(directory)) else { return nil }
        return try? JSONDecoder().decode(LabTunnelServers.self, from: Data(text.utf8))
    }

    static func start(config: LabConfig, topology: LabTopology, directory: String, ip: String, logger: Logger) async throws(LabError) {
        guard let domain = config.iodineDomain else { return }
        let iodined = try Toolbox.require("iodined", package: "iodine")
        let openvpn = try Toolbox.require("openvpn", package: "openvpn")
        let wireguardGo = try Toolbox.require("wireguard-go", package: "wireguard-go")
        let wg = try Toolbox.require("wg", package: "wireguard-tools")
        let nginx = try Toolbox.require("nginx", package: "nginx-light")
        let nft = try Toolbox.require("nft", package: "nftables")
        let unbound = try Toolbox.require("unbound", package: "unbound")
        let name = config.name
        let cli = topology.namespace(.client), res = topology.namespace(.resolver), srv = topology.namespace(.server)
        let net = internetNamespace(name)

        // Secrets, each readable by root only.
        let password = directory + "/iodine.password"
        try SystemCalls.writeFile(password, String(Lab.randomKeyText().prefix(24)) + "\n", mode: 0o600)
        let openvpnKey = directory + "/openvpn.key"
        try await CommandRunner.check([openvpn, "--genkey", "secret", openvpnKey], logger: logger)
        let serverKey = directory + "/wg-server.key", clientKey = directory + "/wg-client.key"
        for path in [serverKey, clientKey] {
            let key = try await CommandRunner.check([wg, "genkey"], logger: logger)
            try SystemCalls.writeFile(path, key, mode: 0o600)
        }
        let serverPublic = try await publicKey(wg: wg, privateKeyFile: serverKey, logger: logger)
        let clientPublic = try await publicKey(wg: wg, privateKeyFile: clientKey, logger: logger)

        logger.info("creating the internet namespace and the tunnel servers", metadata: ["lab": "\(name)"])
        let link = serverInternetLink(name), inner = internetLink(name)
        let steps: [[String]] = [
            [ip, "netns", "add", net],
            [ip, "-n", net, "link", "set", "lo", "up"],
            [ip, "link", "add", "name", link, "netns", srv, "type", "veth", "peer", "name", inner, "netns", net],
            [ip, "-n", srv, "address", "add", internetServerSide + "/24", "dev", link],
            [ip, "-n", net, "address", "add", internetAddress + "/24", "dev", inner],
            [ip, "-n", srv, "link", "set", link, "up"],
            [ip, "-n", net, "link", "set", inner, "up"],
            [ip, "-n", srv, "address", "add", listenAddress + "/24", "dev", topology.serverLink],
            [ip, "-n", net, "route", "add", "198.18.1.0/24", "via", internetServerSide],
            // The client reaches the OpenVPN and WireGuard ports through the resolver namespace.
            [ip, "-n", cli, "route", "add", "198.18.1.0/24", "via", LabTopology.resolverClientSideAddress],
            [ip, "-n", srv, "route", "add", LabTopology.clientSubnet, "via", LabTopology.resolverServerSideAddress],
            [ip, "netns", "exec", res, "/bin/sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward"],
            [ip, "netns", "exec", srv, "/bin/sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward"],
        ]
        for step in steps { try await CommandRunner.check(step, logger: logger) }
        let nat = directory + "/server-nat.nft"
        try SystemCalls.writeFile(nat, """
            table ip tplab {
                chain postrouting {
                    type nat hook postrouting priority srcnat; policy accept;
                    oifname "\(link)" masquerade
                }
            }

            """, mode: 0o644)
        try await CommandRunner.check([ip, "netns", "exec", srv, nft, "-f", nat], logger: logger)

        // nginx: the caller's address as the whole body.
        let nginxConf = directory + "/nginx.conf"
        try SystemCalls.makeDirectories(directory + "/nginx", mode: 0o755)
        let bulk = directory + "/nginx/bulk.bin"
        var generator = SplitMix64(seed: 17)
        var bytes = [UInt8](repeating: 0, count: bulkBytes)
        for i in stride(from: 0, to: bulkBytes, by: 8) {
            withUnsafeBytes(of: generator.next().littleEndian) { word in
                for j in 0..<8 { bytes[i + j] = word[j] }
            }
        }
        guard FileManager.default.createFile(atPath: bulk, contents: Data(bytes), attributes: [.posixPermissions: 0o644]) else {
            throw LabError(.commandFailed, "cannot write \(bulk)")
        }
        try SystemCalls.writeFile(nginxConf, """
            daemon off;
            master_process off;
            worker_processes 1;
            pid \(directory)/nginx.pid;
            error_log stderr warn;
            events { worker_connections 64; }
            http {
                access_log off;
                client_body_temp_path \(directory)/nginx/body;
                proxy_temp_path \(directory)/nginx/proxy;
                fastcgi_temp_path \(directory)/nginx/fastcgi;
                uwsgi_temp_path \(directory)/nginx/uwsgi;
                scgi_temp_path \(directory)/nginx/scgi;
                server {
                    listen \(internetAddress):80;
                    location / { default_type text/plain; return 200 "$remote_addr\\n"; }
                    location = /bulk { default_type application/octet-stream; alias \(bulk); }
                }
            }

            """, mode: 0o644)
        _ = try await launch("nginx", [nginx, "-p", directory + "/nginx", "-c", nginxConf], in: net, directory: directory, ip: ip, logger: logger)

        // The tunnel's DNS: a second unbound that only tunnel traffic reaches.
        let tunnelUnbound = directory + "/unbound-tunnel.conf"
        var unboundText = """
            server:
                do-daemonize: no
                username: ""
                chroot: ""
                directory: "\(directory)"
                pidfile: "\(directory)/unbound-tunnel.pid"
                use-syslog: no
                logfile: ""
                verbosity: 1
                interface: \(internetAddress)
                port: 53
                do-ip6: no
                access-control: 198.18.0.0/15 allow
                module-config: "iterator"
                qname-minimisation: yes

            """
        if let top = config.domain.split(separator: ".").last, UnboundConfiguration.defaultLocalTopLevelZones.contains(String(top)) {
            unboundText += "    local-zone: \"\(top).\" nodefault\n"
        }
        for line in LabSplitNames.unboundLines { unboundText += "    \(line)\n" }
        unboundText += "stub-zone:\n    name: \"\(config.domain).\"\n    stub-addr: \(LabTopology.serverAddress)@53\n"
        try SystemCalls.writeFile(tunnelUnbound, unboundText, mode: 0o644)
        _ = try await launch("unbound-tunnel", [unbound, "-d", "-c", tunnelUnbound], in: net, directory: directory, ip: ip, logger: logger)

        // iodined behind the resolver's delegation of the tunnel domain (-c: the queries come from
        // the resolver, not from the client's address). Behind `serve --forward` it runs with its
        // client address check on: every query reaches it from the relay's one address.
        let secret = SystemCalls.readText(password)?.trimmingWhitespace ?? ""
        let iodineListen = config.forwardsTunnel
            ? ["-l", LabTopology.serverAddress, "-p", "\(forwardedPort)"] : ["-c", "-l", listenAddress]
        _ = try await launch("iodined", [iodined, "-f"] + iodineListen + ["-P", secret, iodineNetwork, domain],
                             in: srv, directory: directory, ip: ip, logger: logger)
        _ = try await launch("openvpn", [openvpn, "--dev", openvpnDevice(name), "--dev-type", "tun", "--local", listenAddress,
                                         "--lport", "\(openvpnPort)", "--proto", "udp", "--secret", openvpnKey, "0",
                                         "--cipher", "AES-256-CBC", "--ifconfig", openvpnServer, openvpnClient,
                                         "--ping", "1", "--verb", "3"],
                             in: srv, directory: directory, ip: ip, logger: logger)
        let wgDevice = wireguardDevice(name)
        _ = try await launch("wireguard-go", [wireguardGo, "-f", wgDevice], in: srv, directory: directory, ip: ip, logger: logger)
        let socket = "/var/run/wireguard/\(wgDevice).sock"
        let clock = ContinuousClock()
        let deadline = clock.now + Lab.startDeadline
        while !SystemCalls.exists(socket) {
            guard clock.now < deadline else { throw LabError(.startFailed, "wireguard-go made no control socket \(socket)") }
            try? await Task.sleep(for: .milliseconds(50))
        }
        try await CommandRunner.check([ip, "netns", "exec", srv, wg, "set", wgDevice, "listen-port", "\(wireguardPort)",
                                       "private-key", serverKey, "peer", clientPublic,
                                       "allowed-ips", wireguardClient.replacingOccurrences(of: "/24", with: "/32")], logger: logger)
        try await CommandRunner.check([ip, "-n", srv, "address", "add", wireguardServer, "dev", wgDevice], logger: logger)
        try await CommandRunner.check([ip, "-n", srv, "link", "set", wgDevice, "up"], logger: logger)
        let dnstt = try await startDnstt(config: config, topology: topology, directory: directory, ip: ip, logger: logger)

        var servers = LabTunnelServers(
            domain: domain, resolver: LabTopology.resolverClientSideAddress, iodinePasswordFile: password,
            openvpnRemote: "\(listenAddress):\(openvpnPort)", openvpnKeyFile: openvpnKey,
            openvpnClientAddress: openvpnClient, openvpnServerAddress: openvpnServer,
            wireguardEndpoint: "\(listenAddress):\(wireguardPort)", wireguardClientKeyFile: clientKey,
            wireguardServerPublicKey: serverPublic, wireguardClientAddress: wireguardClient,
            whoamiURL: "http://\(internetAddress)/", bulkURL: "http://\(internetAddress)/bulk", bulkBytes: bulkBytes,
            exitAddress: internetServerSide, tunnelDNS: internetAddress)
        if let dnstt {
            servers.dnsttDomain = dnstt.domain
            servers.dnsttPublicKey = dnstt.publicKey
            servers.dnsttPublicKeyFile = dnstt.publicKeyFile
            servers.dnsttMTU = dnstt.mtu
        }
        var withProfiles = servers
        withProfiles.profiles = try writeProfiles(servers, directory: directory)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(withProfiles) else { throw LabError(.commandFailed, "cannot encode the tunnel servers") }
        try SystemCalls.writeFile(file(directory), String(decoding: data, as: UTF8.self) + "\n", mode: 0o644)
        try await waitForListeners(directory: directory,
                                   iodine: config.forwardsTunnel ? (LabTopology.serverAddress, forwardedPort) : (listenAddress, 53))
    }

    /// dnstt-server for `config.dnsttDomain` on `dnsttAddress`, in front of microsocks, with a key
    /// pair made for this lab; `-mtu` is the resolver's UDP limit (so answers pass it) or dnstt's
    /// default. Nothing when the lab does not run dnstt.
    static func startDnstt(config: LabConfig, topology: LabTopology, directory: String, ip: String,
                           logger: Logger) async throws(LabError) -> (domain: String, publicKey: String, publicKeyFile: String, mtu: Int)? {
        guard let server = config.dnsttServer, let domain = config.dnsttDomain else { return nil }
        guard SystemCalls.exists(server) else { throw LabError(.missingTool, "dnstt-server not found at \(server)") }
        let microsocks = try Toolbox.require("microsocks", package: "microsocks")
        let srv = topology.namespace(.server)
        let privateKey = directory + "/dnstt.key", publicKey = directory + "/dnstt.pub"
        try? SystemCalls.removeTree(privateKey)
        try? SystemCalls.removeTree(publicKey)
        try await CommandRunner.check([server, "-gen-key", "-privkey-file", privateKey, "-pubkey-file", publicKey], logger: logger)
        let key = SystemCalls.readText(publicKey)?.trimmingWhitespace ?? ""
        let mtu = config.resolverUDPLimit.map { min($0, dnsttDefaultMTU) } ?? dnsttDefaultMTU
        try await CommandRunner.check([ip, "-n", srv, "address", "add", dnsttAddress + "/24", "dev", topology.serverLink], logger: logger)
        _ = try await launch("microsocks", [microsocks, "-i", dnsttUpstream.0, "-p", "\(dnsttUpstream.1)"],
                             in: srv, directory: directory, ip: ip, logger: logger)
        _ = try await launch("dnstt-server", [server, "-udp", "\(dnsttAddress):53", "-privkey-file", privateKey, "-mtu", "\(mtu)",
                                              domain, "\(dnsttUpstream.0):\(dnsttUpstream.1)"],
                             in: srv, directory: directory, ip: ip, logger: logger)
        return (domain, key, publicKey, mtu)
    }

    /// The profiles a user would otherwise write by hand from `lab status --json`: iodine through the
    /// lab's resolver, OpenVPN with its static key, WireGuard; each expects the lab's exit address and
    /// the tunnel-only resolver. The files are the user's to copy; the secrets stay in their own files.
    static func profiles(_ t: LabTunnelServers) -> [(engine: String, json: [String: Any])] {
        let common: [String: Any] = ["version": 1, "expectedExitIP": t.exitAddress, "dns": [t.tunnelDNS]]
        func profile(_ engine: String, _ extra: [String: Any]) -> (engine: String, json: [String: Any]) {
            (engine, common.merging(["name": "lab \(engine)", "protocol": engine], uniquingKeysWith: { $1 }).merging(extra, uniquingKeysWith: { $1 }))
        }
        // No `dns`: dnstt carries TCP only (its listener), so the sandbox's own DNS would go nowhere;
        // names are resolved remotely by the server's SOCKS5 upstream (docs/VERIFY.md "dnstt").
        let dnstt: [(engine: String, json: [String: Any])] = t.dnsttDomain.flatMap { domain in
            t.dnsttPublicKeyFile.map { key in
                var made = profile("dnstt", ["domain": domain, "resolvers": [["type": "udp", "address": "\(t.resolver):53"]],
                                             "dnstt": ["pubkeyFile": key]])
                made.json["dns"] = nil
                return [made]
            }
        } ?? []
        return dnstt + [
            profile("iodine", ["domain": t.domain, "resolvers": [["type": "udp", "address": "\(t.resolver):53"]],
                               "iodine": ["passwordFile": t.iodinePasswordFile]]),
            profile("openvpn", ["openvpn": ["remote": t.openvpnRemote, "keyFile": t.openvpnKeyFile,
                                            "localAddress": t.openvpnClientAddress, "remoteAddress": t.openvpnServerAddress]]),
            profile("wireguard", ["wireguard": ["endpoint": t.wireguardEndpoint, "keyFile": t.wireguardClientKeyFile,
                                                "address": t.wireguardClientAddress, "peerPublicKey": t.wireguardServerPublicKey]]),
        ]
    }

    static func writeProfiles(_ t: LabTunnelServers, directory: String) throws(LabError) -> [String: String] {
        var written: [String: String] = [:]
        for (engine, json) in profiles(t) {
            guard let data = try? JSONSerialization.data(withJSONObject: json, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]) else {
                throw LabError(.commandFailed, "cannot encode the \(engine) profile")
            }
            let path = "\(directory)/\(engine).json"
            try SystemCalls.writeFile(path, String(decoding: data, as: UTF8.self) + "\n", mode: 0o644)
            written[engine] = path
        }
        return written
    }

    private static func publicKey(wg: String, privateKeyFile: String, logger: Logger) async throws(LabError) -> String {
        let output = try await CommandRunner.check(["/bin/sh", "-c", "\"$0\" pubkey < \"$1\"", wg, privateKeyFile], logger: logger)
        return output.trimmingWhitespace
    }

    private static func launch(_ role: String, _ argv: [String], in namespace: String, directory: String, ip: String,
                               logger: Logger) async throws(LabError) -> Int32 {
        let log = "\(directory)/\(role).log"
        let pid = try await CommandRunner.launchDetached([ip, "netns", "exec", namespace] + argv, log: log, logger: logger)
        var pids = (SystemCalls.readText(directory + "/tunnel.pids") ?? "")
        pids += "\(role) \(pid)\n"
        try SystemCalls.writeFile(directory + "/tunnel.pids", pids, mode: 0o644)
        return pid
    }

    /// Waits until every daemon has stayed up and the UDP servers listen.
    private static func waitForListeners(directory: String, iodine: (String, Int)) async throws(LabError) {
        let clock = ContinuousClock()
        let deadline = clock.now + Lab.startDeadline
        let entries = (SystemCalls.readText(directory + "/tunnel.pids") ?? "").split(separator: "\n").compactMap { line -> (String, Int32)? in
            let parts = line.split(separator: " ")
            guard parts.count == 2, let pid = Int32(parts[1]) else { return nil }
            return (String(parts[0]), pid)
        }
        let listeners: [String: (String, Int)] = ["iodined": iodine, "unbound-tunnel": (internetAddress, 53),
                                                   "openvpn": (listenAddress, openvpnPort), "dnstt-server": (dnsttAddress, 53)]
        while true {
            var ready = true
            for (role, pid) in entries {
                guard SystemCalls.process(pid)?.isAlive == true else {
                    throw LabError(.startFailed, "\(role) exited during start: \(Lab.lastLogLine("\(directory)/\(role).log"))")
                }
                if let (address, port) = listeners[role] {
                    let table = SystemCalls.readText("/proc/\(pid)/net/udp") ?? ""
                    if !UDPSocketTable.hasSocket(in: table, address: address, port: port) { ready = false }
                }
            }
            if ready { return }
            guard clock.now < deadline else { throw LabError(.startFailed, "the tunnel servers did not listen within \(Lab.startDeadline)") }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Stops what `start` made that the lab's own teardown does not reach: the processes of the
    /// internet namespace, the namespace itself and wireguard-go's control socket.
    static func stop(name: String, ip: String, logger: Logger) async {
        let net = internetNamespace(name)
        if SystemCalls.exists("/run/netns/\(net)") {
            let listed = (try? await CommandRunner.check([ip, "netns", "pids", net], logger: logger)) ?? ""
            let pids = listed.split(whereSeparator: \.isWhitespace).compactMap { Int32($0) }
            for pid in pids { SystemCalls.signal(pid, SystemCalls.killSignal) }
            try? await Task.sleep(for: .milliseconds(50))
            _ = try? await CommandRunner.check([ip, "netns", "delete", net], logger: logger)
        }
        try? SystemCalls.removeTree("/var/run/wireguard/\(wireguardDevice(name)).sock")
    }
}
