import Base
import Foundation

/// The sandbox's TCP sent into a SOCKS-shaped engine the way the seed's packet-flow bridge
/// (hev-socks5-tunnel) sends the device's: Debian has no tun2socks, so redsocks (Debian `redsocks`)
/// listens inside the sandbox and an nftables `redirect` in the sandbox's output path hands it
/// every IPv4 TCP connection the sandbox's routes send into the TUN (what the packet tunnel would
/// read), never one to loopback or to a carrier (a carrier redirected into its own engine is the
/// route loop). redsocks finds each connection's original destination (SO_ORIGINAL_DST) and opens
/// it through the engine's SOCKS5 listener. `verify`, `verify --cycles` and `resilience` all use it;
/// the last two start it with each engine start and stop it with the engine, as the device's
/// packet tunnel comes and goes with its VPN.
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

    /// The redirect, in the sandbox's own namespace (it goes with the namespace). Locally made
    /// packets are routed before the nat output hook, so the output interface is known there: only
    /// what the routes send into the TUN is redirected, so a split's direct destinations stay direct.
    var rules: String {
        let carriers = Set(self.carriers.filter { !$0.isIPv6 }.map(\.host)).sorted()
        // Declared, deleted, made again: loading the file replaces a table a killed start left.
        var text = "table ip \(Self.table)\ndelete table ip \(Self.table)\n"
        text += "table ip \(Self.table) {\n    chain output {\n        type nat hook output priority -100; policy accept;\n"
        text += "        ip daddr 127.0.0.0/8 return\n"
        if !carriers.isEmpty { text += "        ip daddr { \(carriers.joined(separator: ", ")) } return\n" }
        text += "        oifname \"\(sandbox.tunDevice)\" meta l4proto tcp redirect to :\(Self.port)\n    }\n}\n"
        return text
    }

    /// A bridge that runs: redsocks (its pid, the owner of the listening socket) and the redirect.
    struct Running: Sendable {
        var process: EngineProcess
        var pid: Int32?
    }

    /// The pid that owns redsocks' listener, from `ss -p` (`users:(("redsocks",pid=123,fd=4))`).
    static func listenerPID(_ ssOutput: String) -> Int32? {
        guard let range = ssOutput.range(of: "pid=") else { return nil }
        return Int32(ssOutput[range.upperBound...].prefix { $0.isNumber })
    }

    /// Removes the redirect, then stops redsocks: the sandbox's TCP is the device's own again.
    func stop(_ running: Running, tools: Tools) async {
        await removeRedirect(tools: tools)
        let pids = running.pid.map { [$0] } ?? ownProcesses()
        if !pids.isEmpty { await Host.terminate(pids) }
        _ = await running.process.waitForExit(timeout: .seconds(1))
    }

    /// The processes in the sandbox that run this bridge's configuration: redsocks when its pid is not
    /// known (it did not listen in time).
    func ownProcesses() -> [Int32] {
        guard let inode = Host.inode(sandbox.namespacePath) else { return [] }
        return Host.processes(inNamespace: inode).filter { Host.readText("/proc/\($0)/cmdline")?.contains(configPath) == true }
    }

    /// Removes the redirect (none there is fine).
    func removeRedirect(tools: Tools) async {
        _ = try? await Host.run([tools.ip, "netns", "exec", sandbox.namespace, tools.nft, "delete", "table", "ip", Self.table])
    }

    /// Starts redsocks in the sandbox, waits for its listener, then installs the redirect.
    /// Returns the process (its log is `logPath`) and its pid.
    func start(tools: Tools, redsocks: String, deadline: ContinuousClock.Instant) async throws(VerifyError) -> Running {
        do {
            try Data(config.utf8).write(to: URL(fileURLWithPath: configPath))
            try Data(rules.utf8).write(to: URL(fileURLWithPath: rulesPath))
        } catch {
            throw VerifyError(.sandboxFailed, "cannot write the bridge's files in \(sandbox.directory): \(error)")
        }
        sandbox.recordStep("bridge")
        let process = EngineProcess(argv: [tools.ip, "netns", "exec", sandbox.namespace, redsocks, "-c", configPath], log: logPath)
        let clock = ContinuousClock()
        var pid: Int32?
        while true {
            if let code = process.exitStatus {
                throw VerifyError(.sandboxFailed, "redsocks exited with status \(code): \(Host.lastLine(process.logText) ?? "no output")")
            }
            // The listener with its owner: `ss` maps sockets to processes from a look at /proc taken
            // before it lists the sockets, so a socket opened in between is listed without `pid=`
            // (once in a full `make test`, a bridge whose redsocks then outlived its stop). Not yet.
            if let listening = try? await Host.run([tools.ip, "netns", "exec", sandbox.namespace, "ss", "-Hltnp", "sport", "= :\(Self.port)"]),
               listening.status == 0, let owner = Self.listenerPID(listening.output) {
                pid = owner
                break
            }
            guard clock.now < deadline else {
                // Not left behind when it does not come up in time: a later start needs its port.
                await stop(Running(process: process, pid: nil), tools: tools)
                throw VerifyError(.sandboxFailed, "redsocks did not listen on 127.0.0.1:\(Self.port) in time")
            }
            try? await clock.sleep(for: .milliseconds(50))
        }
        let running = Running(process: process, pid: pid)
        do {
            try await Host.check([tools.ip, "netns", "exec", sandbox.namespace, tools.nft, "-f", rulesPath])
        } catch {
            await stop(running, tools: tools)
            throw error
        }
        return running
    }
}
