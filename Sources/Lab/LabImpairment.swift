import Logging

/// `lab up --impair`: the impairment relay (`tunnelprobe impair`) in the client namespace, on an
/// address of its own that clients use as their resolver, forwarding to unbound. The direct
/// resolver (198.18.0.1) stays reachable, so a test can compare both paths.
///
/// ```
/// client ns                                         resolver ns
/// lo: 198.18.0.53/32  impair --listen 198.18.0.53:53
///                       └── --upstream 198.18.0.1:53 ──> unbound
/// ```
/// The relay lives in the client namespace because unbound holds the wildcard port 53 in the
/// resolver namespace; from the resolver it looks like a client at 198.18.0.2. `down` stops it
/// with the namespace's other processes (SIGTERM: it writes its summary and closes its log).
enum LabImpairment {
    static let role = "impair"
    static let address = "198.18.0.53"
    static let flagsTheLabSets: Set<String> = ["--listen", "--upstream", "--log"]

    static func logPath(_ directory: String) -> String { directory + "/impair.jsonl" }

    /// The command must name a program and leave the endpoints and the log to the lab.
    static func validate(_ command: [String]) throws(LabError) {
        guard let program = command.first, !program.isEmpty else {
            throw LabError(.invalidConfig, "the impair command is empty")
        }
        for argument in command.dropFirst() {
            let flag = String(argument.split(separator: "=", maxSplits: 1).first ?? "")
            if flagsTheLabSets.contains(flag) {
                throw LabError(.invalidConfig, "--impair: \(flag) is set by the lab (the relay listens on \(address):53 and logs to the lab's state directory)")
            }
        }
    }

    static func start(
        _ command: [String],
        topology: LabTopology,
        directory: String,
        ip: String,
        state: inout LabState,
        logger: Logger
    ) async throws(LabError) {
        let client = topology.namespace(.client)
        try await CommandRunner.check([ip, "-n", client, "address", "add", "\(address)/32", "dev", "lo"], logger: logger)
        logger.info("starting the impairment relay", metadata: ["lab": "\(topology.name)"])
        let argv = command + [
            "--listen", "\(address):\(LabTopology.dnsPort)",
            "--upstream", "\(LabTopology.resolverClientSideAddress):\(LabTopology.dnsPort)",
            "--log", logPath(directory),
        ]
        let daemon = try await Lab.startDaemon(
            role: role, argv: argv, in: client, directory: directory, ip: ip, state: &state, logger: logger
        )
        // Ready when its socket is bound; a probe query could be lost to the very impairments.
        let clock = ContinuousClock()
        let deadline = clock.now + Lab.startDeadline
        while true {
            guard daemon.isRunning else {
                throw LabError(.startFailed, "impair relay exited during start: \(Lab.lastLogLine(daemon.log))")
            }
            if let table = SystemCalls.readText("/proc/\(daemon.pid)/net/udp"),
               UDPSocketTable.hasSocket(in: table, address: address, port: LabTopology.dnsPort) {
                return
            }
            guard clock.now < deadline else {
                throw LabError(.startFailed, "impair relay did not listen on \(address):\(LabTopology.dnsPort) within \(Lab.startDeadline): \(Lab.lastLogLine(daemon.log))")
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }
}
