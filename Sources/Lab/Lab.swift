public import Logging
public import Base
import OSLayer
import Foundation

/// The namespace testbed: a client namespace where scans run, a resolver namespace with a real
/// unbound, and a server namespace with the probe responder. See `LabTopology` for the wiring.
///
/// Lab names are machine-wide (they name network namespaces), whatever the state root.
public enum Lab {
    /// The three namespaces of a lab.
    public enum Role: String, Sendable, Codable, Hashable, CaseIterable {
        case client, resolver, server
    }

    /// How long `up` waits for each daemon to become ready.
    static let startDeadline: Duration = .seconds(10)
    /// How long `down` waits after SIGTERM before SIGKILL.
    static let terminationGrace: Duration = .seconds(2)
    /// The name the readiness probe asks for; unbound answers it from its built-in local zone.
    static let readinessName = "localhost."

    // MARK: - up

    /// Builds the lab and returns its status once unbound answers from the client namespace and
    /// the responder is ready. Idempotent: a healthy lab with the same configuration is returned
    /// as it is; a broken one or one with another configuration is rebuilt. On any failure
    /// everything created so far is removed before the error is thrown.
    public static func up(_ config: LabConfig, logger: Logger) async throws(LabError) -> LabStatus {
        try config.validate()
        let tools = try Tools.locate(needUnbound: config.software == .unbound, needKresd: config.software == .knot)
        try SystemCalls.makeDirectories(config.stateRoot, mode: 0o755)
        return try await DirectoryLock.withLock(on: config.stateRoot) { () async throws(LabError) -> LabStatus in
            await reclaimOrphanBuilds(stateRoot: config.stateRoot, ip: tools.ip, logger: logger)
            if let existing = await status(name: config.name, stateRoot: config.stateRoot) {
                let directory = LabState.directory(name: config.name, stateRoot: config.stateRoot)
                if existing.healthy, LabState.load(directory: directory)?.config == config {
                    logger.info("lab already up", metadata: ["lab": "\(config.name)"])
                    return existing
                }
                logger.notice(
                    "rebuilding lab",
                    metadata: ["lab": "\(config.name)", "reason": "\(existing.healthy ? "configuration changed" : "not healthy")"]
                )
                try await teardown(name: config.name, stateRoot: config.stateRoot, ip: tools.ip, logger: logger)
            }
            do throws(LabError) {
                return try await build(config, tools: tools, logger: logger)
            } catch {
                logger.info("lab up failed, removing what was built", metadata: ["lab": "\(config.name)", "error": "\(error)"])
                do {
                    try await teardown(name: config.name, stateRoot: config.stateRoot, ip: tools.ip, logger: logger)
                } catch let cleanup {
                    logger.warning("cleanup after a failed up failed", metadata: ["error": "\(cleanup)"])
                }
                throw error
            }
        }
    }

    private static func build(_ config: LabConfig, tools: Tools, logger: Logger) async throws(LabError) -> LabStatus {
        var topology = LabTopology(name: config.name)
        topology.ipv6 = config.resolverIPv6 == true
        let directory = LabState.directory(name: config.name, stateRoot: config.stateRoot)
        let ip = tools.ip
        try SystemCalls.makeDirectories(directory, mode: 0o755)
        var state = LabState(config: config)
        state.builderPID = SystemCalls.currentProcessID
        state.builderStartTime = SystemCalls.process(SystemCalls.currentProcessID)?.startTime
        state.builderPIDNamespace = SystemCalls.identity("/proc/self/ns/pid")?.inode
        state.built = false
        // Saved first, so that a lab killed half-way is still recognised by `status` and removed
        // by the next `up` or `down` once its builder is gone.
        try state.save(directory: directory)
        try SystemCalls.writeFile(keyPath(directory), randomKeyText(), mode: 0o600)

        logger.info("creating namespaces", metadata: ["lab": "\(config.name)"])
        for role in Role.allCases {
            try await CommandRunner.check([ip, "netns", "add", topology.namespace(role)], logger: logger)
        }
        for arguments in topology.networkCommands {
            try await CommandRunner.check([ip] + arguments, logger: logger)
        }

        let resolver = try await startResolver(config, tools: tools, topology: topology, directory: directory,
                                               ip: ip, state: &state, logger: logger)
        try await waitForResolver(resolver, software: config.software, topology: topology)

        logger.info("starting responder", metadata: ["lab": "\(config.name)"])
        let listen = "\(LabTopology.serverAddress):\(LabTopology.dnsPort)"
        let responder = try await startDaemon(
            role: "responder",
            argv: config.serverCommand + ["--domain", config.domain, "--key-file", keyPath(directory), "--listen", listen]
                + (config.forwardsTunnel ? ["--forward", TunnelServers.forwardedIodine] : []),
            in: topology.namespace(.server),
            directory: directory,
            ip: ip,
            state: &state,
            logger: logger
        )
        try await waitForResponder(responder, readiness: config.responderReadiness)
        if let impair = config.impairCommand {
            try await LabImpairment.start(impair, topology: topology, directory: directory, ip: ip, state: &state, logger: logger)
        }
        try await TunnelServers.start(config: config, topology: topology, directory: directory, ip: ip, logger: logger)

        guard let status = await status(name: config.name, stateRoot: config.stateRoot), status.healthy else {
            throw LabError(.startFailed, "lab \(config.name) is not healthy right after start (see \(directory))")
        }
        if var saved = LabState.load(directory: directory) {
            saved.built = true
            try saved.save(directory: directory)
        }
        logger.notice("lab up", metadata: ["lab": "\(config.name)", "state": "\(directory)"])
        return status
    }

    static func startDaemon(
        role: String,
        argv: [String],
        in namespace: String,
        directory: String,
        ip: String,
        state: inout LabState,
        logger: Logger
    ) async throws(LabError) -> LabState.Daemon {
        let log = "\(directory)/\(role).log"
        let pid = try await CommandRunner.launchDetached([ip, "netns", "exec", namespace] + argv, log: log, logger: logger)
        // A daemon that already exited has no start time; it is then never taken as running.
        let daemon = LabState.Daemon(
            role: role,
            pid: pid,
            startTime: SystemCalls.process(pid)?.startTime ?? 0,
            log: log,
            namespace: namespace
        )
        state.daemons.append(daemon)
        try state.save(directory: directory)
        return daemon
    }

    /// Writes the resolver's configuration and starts it (unbound, or kresd for knot-resolver).
    private static func startResolver(_ config: LabConfig, tools: Tools, topology: LabTopology, directory: String,
                                      ip: String, state: inout LabState, logger: Logger) async throws(LabError) -> LabState.Daemon {
        let argv: [String]
        switch config.software {
        case .unbound:
            if config.resolverTLS == true { try await LabCertificates.make(in: directory, labName: config.name, expired: config.resolverCertificateExpired == true, logger: logger) }
            let path = directory + "/unbound.conf"
            try SystemCalls.writeFile(path, UnboundConfiguration(config: config, stateDirectory: directory).rendered(), mode: 0o644)
            argv = [tools.unbound, "-d", "-c", path]
        case .knot:
            let path = directory + "/kresd.conf"
            try SystemCalls.writeFile(path, KnotConfiguration(config: config, stateDirectory: directory).rendered(), mode: 0o644)
            argv = [tools.kresd, "-n", "-c", path, directory]
        }
        logger.info("starting \(config.software.role)", metadata: ["lab": "\(config.name)"])
        return try await startDaemon(role: config.software.role, argv: argv, in: topology.namespace(.resolver),
                                     directory: directory, ip: ip, state: &state, logger: logger)
    }

    /// Ready when the resolver answers from the client namespace on its own address and (unbound)
    /// on an alias.
    private static func waitForResolver(_ daemon: LabState.Daemon, software: LabConfig.ResolverSoftware,
                                        topology: LabTopology) async throws(LabError) {
        let clock = ContinuousClock()
        let deadline = clock.now + startDeadline
        let clientNamespace = topology.namespacePath(.client)
        let targets = software == .unbound ? [LabTopology.resolverClientSideAddress, aliasProbeAddress]
            : [LabTopology.resolverClientSideAddress]
        var answered: Set<String> = []
        while true {
            guard daemon.isRunning else {
                throw LabError(.startFailed, "\(daemon.role) exited during start: \(lastLogLine(daemon.log))")
            }
            for target in targets where !answered.contains(target) {
                let reply = try? await DNSProbe.query(
                    namespacePath: clientNamespace, server: target, port: LabTopology.dnsPort,
                    name: readinessName, type: 1, ednsPayloadSize: 1232, timeout: .milliseconds(250)
                )
                if let reply, reply.responseCode == 0, reply.source == target { answered.insert(target) }
            }
            if answered.count == targets.count { return }
            guard clock.now < deadline else {
                let missing = targets.filter { !answered.contains($0) }.joined(separator: " and ")
                throw LabError(
                    .startFailed,
                    "\(daemon.role) did not answer on \(missing) port \(LabTopology.dnsPort) within \(startDeadline): \(lastLogLine(daemon.log))"
                )
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
    }

    /// One of the AnyIP aliases, probed during start so that a broken alias route fails `up`.
    static let aliasProbeAddress = "198.18.4.1"

    private static func waitForResponder(_ daemon: LabState.Daemon, readiness: LabConfig.ResponderReadiness) async throws(LabError) {
        let clock = ContinuousClock()
        let start = clock.now
        let deadline = start + startDeadline
        let listen = "\(LabTopology.serverAddress):\(LabTopology.dnsPort)"
        while true {
            guard daemon.isRunning else {
                throw LabError(.startFailed, "responder exited during start: \(lastLogLine(daemon.log))")
            }
            switch readiness {
            case .processAlive:
                if clock.now - start >= .milliseconds(300) { return }
            case .udpListening:
                // /proc/PID/net/udp lists the sockets of the namespace PID lives in.
                if let table = SystemCalls.readText("/proc/\(daemon.pid)/net/udp"),
                   UDPSocketTable.hasSocket(in: table, address: LabTopology.serverAddress, port: LabTopology.dnsPort) {
                    return
                }
                guard clock.now < deadline else {
                    throw LabError(
                        .startFailed,
                        "responder did not listen on UDP \(listen) within \(startDeadline): \(lastLogLine(daemon.log))"
                    )
                }
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    static func lastLogLine(_ path: String) -> String {
        guard let text = SystemCalls.readText(path), let line = ProgramRun.reasonLine(text) else {
            return "(nothing in \(path))"
        }
        return "\(line) (log \(path))"
    }

    static func keyPath(_ directory: String) -> String { directory + "/key.hex" }

    /// 32 bytes from the system's cryptographic generator (getrandom) as lowercase hex.
    static func randomKeyText() -> String {
        var generator = SystemRandomNumberGenerator()
        let digits = Array("0123456789abcdef")
        var text = ""
        for _ in 0..<32 {
            let byte = UInt8.random(in: .min ... .max, using: &generator)
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return text + "\n"
    }

    // MARK: - down

    /// Removes the lab: stops every process in its namespaces and every daemon it recorded
    /// (SIGTERM, then SIGKILL after 2 s), deletes the namespaces (and with them the veths) and the
    /// state directory. Idempotent, and works from the names alone after a hard kill.
    public static func down(
        name: String,
        stateRoot: String = LabConfig.defaultStateRoot,
        logger: Logger
    ) async throws(LabError) {
        try LabConfig.validate(name: name)
        let tools = try Tools.locate(needUnbound: false)
        if SystemCalls.exists(stateRoot) {
            try await DirectoryLock.withLock(on: stateRoot) { () async throws(LabError) in
                await reclaimOrphanBuilds(stateRoot: stateRoot, ip: tools.ip, logger: logger)
                try await teardown(name: name, stateRoot: stateRoot, ip: tools.ip, logger: logger)
            }
        } else {
            try await teardown(name: name, stateRoot: stateRoot, ip: tools.ip, logger: logger)
        }
    }

    /// Removes every lab under `stateRoot` whose `lab up` died before the lab was built (its
    /// builder pid no longer runs with the recorded start time). Built labs are meant to outlive
    /// `lab up` and are never touched; nor is a lab still being built. Called with the lock held.
    static func reclaimOrphanBuilds(stateRoot: String, ip: String, logger: Logger) async {
        for entry in ((try? FileManager.default.contentsOfDirectory(atPath: stateRoot)) ?? []).sorted() {
            guard (try? LabConfig.validate(name: entry)) != nil,
                  let state = LabState.load(directory: LabState.directory(name: entry, stateRoot: stateRoot)),
                  state.config.name == entry, state.isOrphanBuild else { continue }
            logger.notice("reclaiming a lab whose `lab up` was killed", metadata: ["lab": "\(entry)", "builder": "\(state.builderPID ?? 0)"])
            try? await teardown(name: entry, stateRoot: stateRoot, ip: ip, logger: logger)
        }
    }

    private static func teardown(name: String, stateRoot: String, ip: String, logger: Logger) async throws(LabError) {
        let topology = LabTopology(name: name)
        let directory = LabState.directory(name: name, stateRoot: stateRoot)

        var victims: Set<Int32> = []
        for role in Role.allCases where SystemCalls.exists(topology.namespacePath(role)) {
            let listed = try await CommandRunner.check([ip, "netns", "pids", topology.namespace(role)], logger: logger)
            victims.formUnion(listed.split(whereSeparator: \.isWhitespace).compactMap { Int32($0) })
        }
        // Daemons whose namespace is already gone still count, if they are the same processes.
        for daemon in LabState.load(directory: directory)?.daemons ?? [] where daemon.isRunning {
            victims.insert(daemon.pid)
        }
        victims.remove(SystemCalls.currentProcessID)
        await TunnelServers.stop(name: name, ip: ip, logger: logger)
        if !victims.isEmpty {
            logger.info("stopping lab processes", metadata: ["lab": "\(name)", "pids": "\(victims.sorted())"])
            await terminate(victims)
        }

        for role in Role.allCases where SystemCalls.exists(topology.namespacePath(role)) {
            try await CommandRunner.check([ip, "netns", "delete", topology.namespace(role)], logger: logger)
        }
        // Veths are made inside the namespaces; this only catches one moved out by hand.
        for link in topology.links where SystemCalls.exists("/sys/class/net/\(link)") {
            try await CommandRunner.check([ip, "link", "delete", link], logger: logger)
        }
        try SystemCalls.removeTree(directory)
        logger.info("lab down", metadata: ["lab": "\(name)"])
    }

    /// SIGTERM, up to `terminationGrace` to exit, then SIGKILL and up to a second more.
    private static func terminate(_ pids: Set<Int32>) async {
        await ProcessControl.terminate(pids, grace: terminationGrace)
    }

    // MARK: - status

    /// The lab's addresses and health, or `nil` when no trace of a lab of that name exists
    /// (no namespace and no state directory).
    public static func status(name: String, stateRoot: String = LabConfig.defaultStateRoot) async -> LabStatus? {
        guard (try? LabConfig.validate(name: name)) != nil else { return nil }
        let topology = LabTopology(name: name)
        let directory = LabState.directory(name: name, stateRoot: stateRoot)
        let state = LabState.load(directory: directory)
        let namespacesPresent = Role.allCases.filter { SystemCalls.exists(topology.namespacePath($0)) }
        guard state != nil || !namespacesPresent.isEmpty || SystemCalls.exists(directory) else { return nil }

        let processes = (state?.daemons ?? []).map { daemon in
            let namespacePath = "/run/netns/\(daemon.namespace)"
            let inNamespace = SystemCalls.identity(namespacePath).map { $0 == SystemCalls.networkNamespace(of: daemon.pid) } ?? false
            return LabProcess(role: daemon.role, pid: daemon.pid, running: daemon.isRunning && inNamespace, log: daemon.log)
        }
        let roles = Set(processes.map(\.role))
        let impaired = state?.config.impairCommand != nil
        let healthy = namespacesPresent.count == Role.allCases.count
            && roles == Set([state?.config.software.role ?? "unbound", "responder"] + (impaired ? [LabImpairment.role] : []))
            && processes.allSatisfy(\.running)
        return LabStatus(
            name: name,
            namespaces: .init(
                client: topology.namespace(.client),
                resolver: topology.namespace(.resolver),
                server: topology.namespace(.server)
            ),
            clientAddress: LabTopology.clientAddress,
            resolverAddress: LabTopology.resolverClientSideAddress,
            resolverPort: LabTopology.dnsPort,
            resolverAliases: LabTopology.resolverAliases,
            serverAddress: LabTopology.serverAddress,
            domain: state?.config.domain ?? "",
            keyFile: keyPath(directory),
            resolverUDPLimit: state?.config.resolverUDPLimit,
            stateDirectory: directory,
            processes: processes,
            healthy: healthy,
            impairedResolverAddress: impaired ? LabImpairment.address : nil,
            impairLog: impaired ? LabImpairment.logPath(directory) : nil,
            tunnel: TunnelServers.load(directory: directory)
        )
    }

    // MARK: - exec and namespaces

    /// Runs `command` in the client namespace with this process's stdin, stdout and stderr and
    /// returns its exit status (128 + N when killed by signal N).
    public static func exec(
        name: String,
        stateRoot: String = LabConfig.defaultStateRoot,
        command: [String]
    ) async throws(LabError) -> Int32 {
        try LabConfig.validate(name: name)
        guard !command.isEmpty else { throw LabError(.invalidConfig, "no command to run in lab \(name)") }
        let tools = try Tools.locate(needUnbound: false)
        let topology = LabTopology(name: name)
        guard SystemCalls.exists(topology.namespacePath(.client)) else {
            throw LabError(.notUp, "lab \(name) is not up: no namespace \(topology.namespace(.client)) (run `tunnelprobe lab up --name \(name)`)")
        }
        return try await CommandRunner.runInheritingStandardIO([tools.ip, "netns", "exec", topology.namespace(.client)] + command)
    }

    /// Runs `command` in the client namespace with its output appended to the file `log`; returns its
    /// exit status (128 + N when killed by signal N).
    public static func exec(
        name: String,
        stateRoot: String = LabConfig.defaultStateRoot,
        command: [String],
        log: String
    ) async throws(LabError) -> Int32 {
        try LabConfig.validate(name: name)
        guard !command.isEmpty else { throw LabError(.invalidConfig, "no command to run in lab \(name)") }
        let tools = try Tools.locate(needUnbound: false)
        return try await CommandRunner.runLogging([tools.ip, "netns", "exec", LabTopology(name: name).namespace(.client)] + command, to: log)
    }

    /// `["ip", "netns", "exec", <namespace>] + command`, for callers that spawn processes
    /// themselves.
    public static func namespaceCommand(name: String, role: Role, command: [String]) -> [String] {
        ["ip", "netns", "exec", LabTopology(name: name).namespace(role)] + command
    }

    /// Sends one DNS query from inside a lab namespace (by default the client's) and returns the
    /// first reply with the query's id. The socket is unconnected, so `source` shows where the
    /// reply really came from.
    public static func query(
        name: String,
        from role: Role = .client,
        server: String,
        port: Int = 53,
        qname: String,
        qtype: UInt16 = 1,
        ednsPayloadSize: Int? = 4096,
        timeout: Duration = .seconds(2)
    ) async throws(LabError) -> LabDNSReply {
        try LabConfig.validate(name: name)
        guard SystemCalls.isRoot else { throw LabError(.notRoot, "entering a lab namespace needs root") }
        return try await DNSProbe.query(
            namespacePath: LabTopology(name: name).namespacePath(role),
            server: server, port: port, name: qname, type: qtype,
            ednsPayloadSize: ednsPayloadSize, timeout: timeout
        )
    }
}
