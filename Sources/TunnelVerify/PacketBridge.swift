import Base
import Foundation

/// The sandbox's TCP sent into a SOCKS-shaped engine the way the seed's packet-flow bridge
/// (hev-socks5-tunnel) sends the device's: Debian has no tun2socks, so redsocks (Debian `redsocks`)
/// listens inside the sandbox and an nftables `redirect` in the sandbox's output path hands it
/// every IPv4 TCP connection the sandbox opens, except to loopback and to the carriers (a carrier
/// redirected into its own engine is the route loop). redsocks finds each connection's original
/// destination (SO_ORIGINAL_DST) and opens it through the engine's SOCKS5 listener.
///
/// Supported: IPv4 TCP from any program in the sandbox; DNS through the engine's own DNS listener
/// (resolv.conf, `Profile.sandboxDNS`). Not bridged: UDP other than DNS, IPv6 and ICMP; they follow
/// the tunnel's default routes into the TUN, which nothing reads: dropped, neither carried nor leaked.
struct PacketBridge: Sendable {
    /// redsocks' port inside the sandbox.
    static let port: UInt16 = 18_001
    static let table = "tp_bridge"

    let sandbox: Sandbox
    let socks: Endpoint
    let carriers: [Endpoint]

    var configPath: String { sandbox.directory + "/redsocks.conf" }
    var logPath: String { sandbox.directory + "/redsocks.log" }
    var rulesPath: String { sandbox.directory + "/bridge.nft" }

    /// redsocks.conf (redsocks 0.5: `base` and one `redsocks` section).
    var config: String {
        """
        base {
            log_debug = off;
            log_info = on;
            log = stderr;
            daemon = off;
            redirector = iptables;
        }
        redsocks {
            local_ip = 127.0.0.1;
            local_port = \(Self.port);
            ip = \(socks.host);
            port = \(socks.port);
            type = socks5;
        }

        """
    }

    /// The redirect, in the sandbox's own namespace (it goes with the namespace).
    var rules: String {
        let carriers = Set(self.carriers.filter { !$0.isIPv6 }.map(\.host)).sorted()
        var text = "table ip \(Self.table) {\n    chain output {\n        type nat hook output priority -100; policy accept;\n"
        text += "        ip daddr 127.0.0.0/8 return\n"
        if !carriers.isEmpty { text += "        ip daddr { \(carriers.joined(separator: ", ")) } return\n" }
        text += "        meta l4proto tcp redirect to :\(Self.port)\n    }\n}\n"
        return text
    }

    /// Starts redsocks in the sandbox, waits for its listener, then installs the redirect.
    /// Returns the process (its log is `logPath`).
    func start(tools: Tools, redsocks: String, deadline: ContinuousClock.Instant) async throws(VerifyError) -> EngineProcess {
        do {
            try Data(config.utf8).write(to: URL(fileURLWithPath: configPath))
            try Data(rules.utf8).write(to: URL(fileURLWithPath: rulesPath))
        } catch {
            throw VerifyError(.sandboxFailed, "cannot write the bridge's files in \(sandbox.directory): \(error)")
        }
        sandbox.recordStep("bridge")
        let process = EngineProcess(argv: [tools.ip, "netns", "exec", sandbox.namespace, redsocks, "-c", configPath], log: logPath)
        let clock = ContinuousClock()
        while true {
            if let code = process.exitStatus {
                throw VerifyError(.sandboxFailed, "redsocks exited with status \(code): \(Host.lastLine(process.logText) ?? "no output")")
            }
            if let listening = try? await Host.run([tools.ip, "netns", "exec", sandbox.namespace, "ss", "-Hltn", "sport", "= :\(Self.port)"]),
               listening.status == 0, !listening.output.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
                break
            }
            guard clock.now < deadline else { throw VerifyError(.sandboxFailed, "redsocks did not listen on 127.0.0.1:\(Self.port) in time") }
            try? await clock.sleep(for: .milliseconds(50))
        }
        try await Host.check([tools.ip, "netns", "exec", sandbox.namespace, tools.nft, "-f", rulesPath])
        return process
    }
}
