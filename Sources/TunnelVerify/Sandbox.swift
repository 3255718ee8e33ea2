import Foundation
import OSLayer

/// The network namespace one `verify` run owns, joined to the namespace it runs from by a veth
/// pair with NAT, so the user's own routes are never touched:
///
/// ```
/// caller namespace                          sandbox tpv-ID
/// tpv-ID-h 198.19.A.B+1/30 ------------- tpv-ID-u 198.19.A.B+2/30   (the uplink: "the device's network")
///          2001:db8:A:B::1/64                     2001:db8:A:B::2/64
/// nft table ip tpv_ID: masquerade           tpv-ID-t: the TUN the engine attaches to
/// ```
/// The sandbox plays a packet-tunnel client: it owns the TUN (as iOS owns the utun), so routes
/// into it stay when the engine dies; the uplink keeps IPv4 and IPv6 default routes at metric
/// 1000, which the tunnel's default routes (metric 1; 0 would mean 1024 for IPv6) override. Only 198.19.0.0/16 (RFC 2544)
/// and 2001:db8::/32 (RFC 3849) are used.
public struct Sandbox: Sendable, Hashable {
    public static let defaultStateRoot = "/run/tunnelprobe/verify"
    /// Every name a sandbox creates starts with this, which is how `cleanup` finds leftovers.
    public static let prefix = "tpv-"
    static let nftPrefix = "tpv_"
    static let uplinkMetric = 1000

    public let id: String
    public let stateRoot: String
    let octets: (a: UInt8, b: UInt8)

    public var namespace: String { "tpv-\(id)" }
    public var namespacePath: String { "/run/netns/\(namespace)" }
    public var hostLink: String { "tpv-\(id)-h" }
    public var uplink: String { "tpv-\(id)-u" }
    public var tunDevice: String { "tpv-\(id)-t" }
    public var nftTable: String { "tpv_\(id)" }
    public var directory: String { stateRoot + "/" + id }
    public var hostAddress: String { "198.19.\(octets.a).\(octets.b &+ 1)" }
    public var uplinkAddress: String { "198.19.\(octets.a).\(octets.b &+ 2)" }
    var subnet: String { "198.19.\(octets.a).\(octets.b)/30" }
    public var hostAddress6: String { "2001:db8:\(octets.a):\(octets.b)::1" }
    public var uplinkAddress6: String { "2001:db8:\(octets.a):\(octets.b)::2" }
    var resolvConf: String { "/etc/netns/\(namespace)/resolv.conf" }

    public static func == (lhs: Sandbox, rhs: Sandbox) -> Bool { lhs.id == rhs.id && lhs.stateRoot == rhs.stateRoot }
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }

    /// A fresh sandbox name: 6 characters from a-z0-9 (interface names stay within 15 bytes) and a
    /// random /30, both from the system generator so concurrent runs do not collide.
    public init(stateRoot: String = Sandbox.defaultStateRoot) {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789")
        id = String((0..<6).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] })
        self.stateRoot = stateRoot
        octets = (UInt8.random(in: 0...255, using: &generator), UInt8.random(in: 0...63, using: &generator) * 4)
    }

    // MARK: - create

    /// Builds the namespace, the veth pair, NAT, the uplink's default routes, resolv.conf and the
    /// TUN. The state (owner pid and start time, then each step's name) is on disk before each step
    /// that creates something, so a run killed at any moment leaves a record of what to remove.
    /// Cancellation (SIGINT) is honoured between steps: `.interrupted` is thrown. On any failure
    /// everything made so far is removed before the error is thrown.
    func create(dnsServers: [String], tools: Tools) async throws(VerifyError) {
        // What earlier runs killed hard left behind (their owners are dead) goes first.
        for root in Set([stateRoot, Sandbox.defaultStateRoot]).sorted() { _ = await Sandbox.reclaimOrphans(stateRoot: root) }
        if Task.isCancelled { throw VerifyError(.interrupted, "interrupted before the sandbox was built") }
        let me = ProcessControl.currentID
        guard let started = Host.startTime(of: me) else { throw VerifyError(.sandboxFailed, "cannot read /proc/\(me)/stat") }
        var state = SandboxState(id: id, ownerPID: me, ownerStartTime: started)
        state.pidNamespace = Host.pidNamespace
        // The directory and the state come first: nothing is created before they exist.
        try Host.makeDirectory(directory)
        try state.save(directory)
        state.callerNamespace = await Sandbox.callerNamespace(ip: tools.ip)
        try state.save(directory)
        do {
            try await build(dnsServers: dnsServers, tools: tools, state: &state)
        } catch {
            // A fresh task: the removal must not see the cancellation that may have ended the build.
            await Task.detached { await destroy(tools: tools) }.value
            throw error
        }
    }

    private func build(dnsServers: [String], tools: Tools, state: inout SandboxState) async throws(VerifyError) {
        let ip = tools.ip
        let directory = directory
        func step(_ name: String, _ state: inout SandboxState) throws(VerifyError) {
            if Task.isCancelled { throw VerifyError(.interrupted, "interrupted while the sandbox was built (before \(name))") }
            try state.begin(name, in: directory)
        }
        try step("netns", &state)
        try await Host.check([ip, "netns", "add", namespace])
        try step("veth", &state)
        try await Host.check([ip, "link", "add", "name", hostLink, "type", "veth", "peer", "name", uplink, "netns", namespace])
        let steps: [[String]] = [
            [ip, "address", "add", hostAddress + "/30", "dev", hostLink],
            [ip, "-6", "address", "add", hostAddress6 + "/64", "dev", hostLink, "nodad"],
            [ip, "link", "set", hostLink, "up"],
            [ip, "-n", namespace, "link", "set", "lo", "up"],
            [ip, "-n", namespace, "address", "add", uplinkAddress + "/30", "dev", uplink],
            [ip, "-n", namespace, "-6", "address", "add", uplinkAddress6 + "/64", "dev", uplink, "nodad"],
            [ip, "-n", namespace, "link", "set", uplink, "up"],
            [ip, "-n", namespace, "route", "add", "default", "via", hostAddress, "dev", uplink, "metric", "\(Sandbox.uplinkMetric)"],
            [ip, "-n", namespace, "-6", "route", "add", "default", "via", hostAddress6, "dev", uplink, "metric", "\(Sandbox.uplinkMetric)"],
        ]
        for command in steps {
            if Task.isCancelled { throw VerifyError(.interrupted, "interrupted while the sandbox was built") }
            try await Host.check(command)
        }
        try step("tun", &state)
        try await Host.check([ip, "-n", namespace, "tuntap", "add", "dev", tunDevice, "mode", "tun"])
        try await Host.check([ip, "-n", namespace, "link", "set", tunDevice, "up"])

        // NAT towards whatever the caller's namespace routes to (RFC 3022 masquerading).
        let forwarding = "/proc/sys/net/ipv4/ip_forward"
        // When a live run from this namespace already switched forwarding on, the value to restore
        // is the one it found.
        let inherited = ((try? FileManager.default.contentsOfDirectory(atPath: stateRoot)) ?? []).filter { $0 != id }
            .compactMap { SandboxState.load(stateRoot + "/" + $0) }
            .first { $0.ownerAlive && $0.callerNamespace == state.callerNamespace }?.forwardingBefore
        state.forwardingBefore = inherited ?? Host.readText(forwarding)?.trimmingCharacters(in: .whitespacesAndNewlines)
        try step("nft", &state)
        if state.forwardingBefore != "1" { try Host.writeProc(forwarding, "1\n") }
        let rules = """
            table ip \(nftTable) {
                chain postrouting {
                    type nat hook postrouting priority srcnat; policy accept;
                    ip saddr \(subnet) oifname != "\(hostLink)" masquerade
                }
            }

            """
        let rulesPath = directory + "/nat.nft"
        try Host.writeFile(rulesPath, rules)
        try await Host.check([tools.nft, "-f", rulesPath])

        // `ip netns exec` bind-mounts /etc/netns/NAME/resolv.conf over /etc/resolv.conf.
        try step("etc-netns", &state)
        try Host.makeDirectory("/etc/netns/\(namespace)")
        let lines = dnsServers.isEmpty ? ["# the profile sets no DNS servers"] : dnsServers.map { "nameserver \($0)" }
        try Host.writeFile(resolvConf, lines.joined(separator: "\n") + "\n")
        if Task.isCancelled { throw VerifyError(.interrupted, "interrupted while the sandbox was built") }
    }

    /// Records a step (`engine`) in the state before it runs; processes it starts in the namespace
    /// are found by the namespace even before their pid is recorded.
    func recordStep(_ name: String) {
        guard var state = SandboxState.load(directory) else { return }
        try? state.begin(name, in: directory)
    }

    /// The name `ip netns identify` gives the namespace this process runs in, if any.
    static func callerNamespace(ip: String) async -> String? {
        guard let outcome = try? await Host.run([ip, "netns", "identify", "\(ProcessControl.currentID)"]), outcome.status == 0 else { return nil }
        let name = outcome.output.trimmingCharacters(in: .whitespacesAndNewlines)
        return name.isEmpty ? nil : name
    }

    // MARK: - routes

    /// The tunnel's routes as a packet-tunnel client sets them: default IPv4 (and IPv6 when
    /// claimed) into the TUN, and each carrier address excluded through the uplink.
    func applyTunnelRoutes(carriers: [String], excludeCarriers: Bool, claimIPv6: Bool, tools: Tools) async throws(VerifyError) {
        let ip = tools.ip
        if excludeCarriers {
            for host in Set(carriers).sorted() {
                if host.contains(":") {
                    try await Host.check([ip, "-n", namespace, "-6", "route", "replace", host + "/128", "via", hostAddress6, "dev", uplink])
                } else {
                    try await Host.check([ip, "-n", namespace, "route", "replace", host + "/32", "via", hostAddress, "dev", uplink])
                }
            }
        }
        try await Host.check([ip, "-n", namespace, "route", "replace", "default", "dev", tunDevice, "metric", "1"])
        if claimIPv6 {
            // A TUN without IPv6 still takes the route; the engine drops what it cannot carry.
            let added = try await Host.run([ip, "-n", namespace, "-6", "route", "replace", "default", "dev", tunDevice, "metric", "1"])
            if added.status != 0 {
                try await Host.check([ip, "-n", namespace, "-6", "route", "replace", "blackhole", "default", "metric", "1"])
            }
        }
    }

    /// The carrier addresses whose route leads into the TUN: each one is a route loop, the
    /// engine's own packets would be sent into its own tunnel.
    func routeLoops(carriers: [String], tools: Tools) async -> [String] {
        var loops: [String] = []
        for host in Set(carriers).sorted() {
            let family = host.contains(":") ? "-6" : "-4"
            guard let outcome = try? await Host.run([tools.ip, "-n", namespace, family, "route", "get", host]) else { continue }
            let words = outcome.output.split(whereSeparator: \.isWhitespace)
            if let dev = words.firstIndex(of: "dev"), dev + 1 < words.count, words[dev + 1] == tunDevice {
                loops.append("\(host) via \(tunDevice)")
            }
        }
        return loops
    }

    /// The first IPv4 address on the TUN, `nil` while it has none.
    func tunAddress(tools: Tools) async -> String? {
        guard let outcome = try? await Host.run([tools.ip, "-n", namespace, "-o", "-4", "address", "show", "dev", tunDevice]),
              outcome.status == 0 else { return nil }
        let words = outcome.output.split(whereSeparator: \.isWhitespace)
        guard let inet = words.firstIndex(of: "inet"), inet + 1 < words.count else { return nil }
        return String(words[inet + 1])
    }

    /// Packets the TUN sent towards the engine (up) and got back from it (down).
    func tunCounters() async -> (up: UInt64, down: UInt64)? {
        let device = tunDevice
        // /proc/thread-self/net/dev lists the devices of the reading thread's namespace.
        let values = try? await NamespaceThread.run(in: namespacePath) { () -> [UInt64]? in
            guard let text = Host.readText("/proc/thread-self/net/dev"),
                  let pair = Sandbox.parseNetDev(text, device: device) else { return nil }
            return [pair.0, pair.1]
        }
        guard let pair = values ?? nil else { return nil }
        return (up: pair[0], down: pair[1])
    }

    /// From /proc/net/dev: the device's transmitted packets (what the host sent into the TUN,
    /// i.e. up the tunnel) and received packets (what the engine wrote back).
    static func parseNetDev(_ text: String, device: String) -> (UInt64, UInt64)? {
        for line in text.split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            guard line[..<colon].trimmingCharacters(in: .whitespaces) == device else { continue }
            let fields = line[line.index(after: colon)...].split(whereSeparator: \.isWhitespace).compactMap { UInt64($0) }
            guard fields.count >= 10 else { return nil }
            return (fields[9], fields[1])
        }
        return nil
    }

    // MARK: - destroy

    /// Removes everything: processes in the namespace and recorded ones, the namespace (and with
    /// it the veth pair and the TUN), the nft table, resolv.conf, forwarding and the state
    /// directory. Idempotent; never throws, every step is attempted.
    func destroy(tools: Tools) async {
        let state = SandboxState.load(directory)
        await Sandbox.remove(id: id, stateRoot: stateRoot, state: state, tools: tools)
    }

    static func remove(id: String, stateRoot: String, state: SandboxState?, tools: Tools) async {
        let namespace = "tpv-\(id)"
        var victims = Set((state?.processes ?? []).filter(\.isRunning).map(\.pid))
        let inode = Host.inode("/run/netns/\(namespace)")
        if let inode { victims.formUnion(Host.processes(inNamespace: inode)) }
        victims.remove(ProcessControl.currentID)
        if !victims.isEmpty { await Host.terminate(victims.sorted()) }
        if Host.exists("/run/netns/\(namespace)") { _ = try? await Host.run([tools.ip, "netns", "delete", namespace]) }
        // A process that entered between the scan and the delete (an engine launched by a run
        // killed a moment earlier) lives on in the unmounted namespace: found by its inode.
        if let inode {
            for _ in 0..<5 {
                let stragglers = Host.processes(inNamespace: inode).filter { $0 != ProcessControl.currentID }
                if stragglers.isEmpty { break }
                await Host.terminate(stragglers, grace: .milliseconds(100))
            }
        }
        // The host end normally goes with the namespace; this catches a pair left half-made.
        _ = try? await Host.run([tools.ip, "link", "delete", "tpv-\(id)-h"])
        let nftInCaller: [String] = if let caller = state?.callerNamespace, caller != namespace {
            [tools.ip, "netns", "exec", caller, tools.nft]
        } else if state != nil, Host.inode("/proc/self/ns/net") != Host.inode("/proc/1/ns/net"), let nsenter = Host.locate("nsenter") {
            // An unnamed caller namespace is the initial one (a run in a lab names its namespace);
            // the reclaiming run may be elsewhere.
            [nsenter, "--net=/proc/1/ns/net", tools.nft]
        } else {
            [tools.nft]
        }
        _ = try? await Host.run(nftInCaller + ["delete", "table", "ip", "tpv_\(id)"])
        // Another live run from the same namespace still needs forwarding: it restores it last.
        let others = ((try? FileManager.default.contentsOfDirectory(atPath: stateRoot)) ?? []).filter { $0 != id }
            .compactMap { SandboxState.load(stateRoot + "/" + $0) }
            .filter { $0.ownerAlive && $0.callerNamespace == state?.callerNamespace }
        if others.isEmpty, let before = state?.forwardingBefore, before != "1",
           state?.callerNamespace == nil || state?.ownerAlive == true {
            // Restored only from the caller's own namespace (a hard-killed run in a lab namespace
            // goes with the lab).
            try? Host.writeProc("/proc/sys/net/ipv4/ip_forward", before + "\n")
        }
        // wireguard-go leaves its control socket behind when killed.
        try? FileManager.default.removeItem(atPath: "/var/run/wireguard/tpv-\(id)-t.sock")
        try? FileManager.default.removeItem(atPath: "/etc/netns/\(namespace)")
        try? FileManager.default.removeItem(atPath: stateRoot + "/" + id)
    }

    // MARK: - reclaim after a hard kill

    /// Removes the sandboxes of runs that are provably dead: a state file whose owner pid no
    /// longer runs with the recorded start time, in this PID namespace. Sandboxes of live runs
    /// (other users, other engineers) and anything without a state file are never touched; a
    /// state directory left empty by a run killed before its first write is removed once it is
    /// a minute old. Called at the start of `verify`, `resilience`, `lab up` and `lab down`.
    public static func reclaimOrphans(stateRoot: String = defaultStateRoot) async -> [String] {
        guard Host.isRoot, let ip = Host.locate("ip"), let nft = Host.locate("nft") else { return [] }
        let tools = Tools(ip: ip, nft: nft, engine: nil)
        var removed: [String] = []
        for entry in ((try? FileManager.default.contentsOfDirectory(atPath: stateRoot)) ?? []).sorted() where isValidID(entry) {
            let directory = stateRoot + "/" + entry
            guard let state = SandboxState.load(directory) else {
                if !Host.exists(SandboxState.path(directory)), let age = Host.age(directory), age > 60,
                   ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? ["?"]).isEmpty {
                    try? FileManager.default.removeItem(atPath: directory)
                }
                continue
            }
            guard state.id == entry, state.isOrphan else { continue }
            await remove(id: entry, stateRoot: stateRoot, state: state, tools: tools)
            removed.append("reclaimed sandbox tpv-\(entry) of dead run pid \(state.ownerPID)")
        }
        return removed
    }

    // MARK: - cleanup after a hard kill

    /// What `verify --cleanup` removed, one line per sandbox.
    public static func cleanup(stateRoot: String = defaultStateRoot) async throws(VerifyError) -> [String] {
        let tools = try Tools.locate(engine: nil)
        var ids = Set<String>()
        var live = Set<String>()
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: stateRoot)) ?? [] {
            if let state = SandboxState.load(stateRoot + "/" + entry), state.ownerAlive { live.insert(entry); continue }
            ids.insert(entry)
        }
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/run/netns")) ?? [] where entry.hasPrefix(prefix) {
            let id = String(entry.dropFirst(prefix.count))
            if !live.contains(id) { ids.insert(id) }
        }
        if let tables = try? await Host.run([tools.nft, "list", "tables"]) {
            for line in tables.output.split(separator: "\n") {
                let words = line.split(separator: " ")
                guard words.count == 3, words[2].hasPrefix(nftPrefix) else { continue }
                let id = String(words[2].dropFirst(nftPrefix.count))
                if !live.contains(id) { ids.insert(id) }
            }
        }
        var removed: [String] = []
        for id in ids.sorted() where isValidID(id) {
            await remove(id: id, stateRoot: stateRoot, state: SandboxState.load(stateRoot + "/" + id), tools: tools)
            removed.append("removed sandbox tpv-\(id)")
        }
        return removed
    }

    static func isValidID(_ id: String) -> Bool {
        id.utf8.count == 6 && id.utf8.allSatisfy { ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) }
    }
}

/// The programs a run needs, located (and root checked) before anything is changed.
struct Tools: Sendable {
    var ip: String
    var nft: String
    var engine: String?

    /// `path` (a flag's value, `--engine-path` or `--engine-python`) names the engine program
    /// instead of looking it up on PATH.
    static func locate(engine: (program: String, package: String)?, path: (path: String, flag: String)? = nil) throws(VerifyError) -> Tools {
        guard Host.isRoot else {
            throw VerifyError(.notRoot, "verify needs root (CAP_NET_ADMIN for namespaces, veth, nftables and TUN): run as root or with sudo")
        }
        let ip = try Host.require("ip", package: "iproute2")
        let nft = try Host.require("nft", package: "nftables")
        let engineProgram: String?
        if engine != nil, let path {
            engineProgram = try Self.engine(at: path.path, flag: path.flag)
        } else {
            engineProgram = try engine.map { program, package throws(VerifyError) in try Host.require(program, package: package) }
        }
        return Tools(ip: ip, nft: nft, engine: engineProgram)
    }

    /// The engine program at `path`, which must be an executable file.
    static func engine(at path: String, flag: String) throws(VerifyError) -> String {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
              FileManager.default.isExecutableFile(atPath: path) else {
            throw VerifyError(.missingTool, "\(flag) \(path): no executable file there")
        }
        return path
    }
}
