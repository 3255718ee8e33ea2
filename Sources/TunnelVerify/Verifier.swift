public import Base
import DNSWire
import Foundation
import OSLayer
public import Results

/// The checks `verify` can run after the data phase.
public enum VerifyCheck: String, Sendable, Hashable, CaseIterable, Codable {
    case exitIP, dnsLeak, ipv6Leak, tunnelFailure
}

/// What `verify` and `resilience` both start: a profile's engine, checked before anything is built.
public protocol EngineRunConfiguration: Sendable {
    var profile: Profile { get }
    var engine: EngineKind { get }
    var overrides: EngineOverrides { get }
}

extension EngineRunConfiguration {
    /// Everything that can be checked before anything is created: root, tools, the engine's
    /// settings, and what only running it tells (the Python edition's modules). Throws the one
    /// error line the CLI prints.
    public func preflight() async throws(VerifyError) {
        let (made, tools) = try prepared()
        try await made.checkRuntime(tools: tools)
    }

    /// The engine's settings checked and every program it needs found.
    func prepared() throws(VerifyError) -> (Engine, Tools) {
        var made: Engine
        do {
            made = try Engine.make(engine, profile: profile, overrides: overrides)
        } catch {
            throw VerifyError(.invalidProfile, error.description)
        }
        if made.edition == .python, let path = made.pythonScriptPath {
            made.pythonScript = try MasterDnsVPNPythonScript.locate(path)
        }
        let tools = try Tools.locate(engine: (made.program, made.package), path: made.programPath)
        if engine == .wireguard { _ = try Host.require("wg", package: "wireguard-tools") }
        return (made, tools)
    }
}

public struct VerifyConfiguration: EngineRunConfiguration {
    public var profile: Profile
    public var engine: EngineKind
    public var overrides: EngineOverrides
    /// The endpoint answering with the caller's address; without it there is no data phase
    /// through HTTP and no exit-IP check.
    public var whoami: WhoamiURL?
    /// Deadline for each phase up to the handshake.
    public var deadline: Duration = .seconds(25)
    public var pollInterval: Duration = .milliseconds(250)
    public var checks: Set<VerifyCheck> = Set(VerifyCheck.allCases)
    /// Excludes the carrier addresses from the tunnel's routes (off only to show a route loop).
    public var excludeCarriers = true
    /// Where the IPv6 leak probe aims (a documentation address: RFC 3849).
    public var ipv6Target = "2001:db8:ffff::1"
    /// The zone under which the DNS leak check makes its unique names.
    public var leakDomain = "leak.tunnelprobe.invalid"
    public var leakNames = 3
    /// The responder's leak zone and its key: the unique names become kind-5 marks and the
    /// responder's record of who asked is fetched afterwards (docs/PROTOCOL.md "Leak zone").
    public var leakZone: LeakZoneAccess?
    /// Resolvers allowed to ask for the leak names (the tunnel's own); any other one is a leak.
    public var expectedResolvers: [String] = []
    public var seed: UInt64
    public var stateRoot = Sandbox.defaultStateRoot
    /// The SOCKS5 port of a SOCKS-shaped engine (MasterDnsVPN): data, exit IP and the DNS leak
    /// names go through it, names resolved by the proxy.
    public var socks: Endpoint?
    /// Where the uplink capture is kept (a pcap file); `nil` keeps it only for the run.
    public var capturePath: String?
    /// A bulk download after the first data (`scan --e2e`); nil for none (Transfer.swift).
    public var bulk: BulkTransfer?
    /// Where the engine's log is written (kept with the report); `nil` keeps it only for the run.
    public var engineLogPath: String?
    /// Sends the sandbox's TCP into the SOCKS-shaped engine through redsocks (`PacketBridge`), as
    /// the seed's packet-flow bridge does; on for MasterDnsVPN. Off, only verify's own probes use
    /// the engine's SOCKS5 listener.
    public var bridgeTCP: Bool

    public init(profile: Profile, engine: EngineKind, overrides: EngineOverrides = EngineOverrides(), whoami: WhoamiURL?, seed: UInt64) {
        self.profile = profile
        self.engine = engine
        self.overrides = overrides
        self.whoami = whoami
        self.seed = seed
        socks = engine.defaultSOCKS
        bridgeTCP = engine.bridgesTCP
    }

    /// `EngineRunConfiguration.preflight`, and the bridge's program when the run bridges TCP.
    public func preflight() async throws(VerifyError) {
        let (made, tools) = try prepared()
        if bridgeTCP { _ = try Host.require("redsocks", package: "redsocks") }
        try await made.checkRuntime(tools: tools)
    }
}

extension EngineKind {
    /// Where a SOCKS-shaped engine listens unless `--socks` says otherwise.
    public var defaultSOCKS: Endpoint? {
        switch self {
        case .masterdnsvpn: MasterDnsVPNConfig.defaultSOCKS
        case .dnstt: DnsttClient.defaultListener
        default: nil
        }
    }

    /// SOCKS-shaped engines whose sandbox TCP goes through the packet-flow bridge (`PacketBridge`).
    public var bridgesTCP: Bool { self == .masterdnsvpn || self == .dnstt }
}

extension Profile {
    /// The DNS servers the sandbox's resolv.conf gets for `engine`: MasterDnsVPN's own DNS listener
    /// takes them when the profile names none (the seed's mapdns), the profile's otherwise.
    public func sandboxDNS(for engine: EngineKind) -> [String] {
        engine == .masterdnsvpn && dns.isEmpty ? [MasterDnsVPNConfig.localDNS] : dns
    }
}

/// Runs one verification: sandbox, engine, phases, checks, cleanup, report.
public enum Verifier {
    /// Runs every phase and check. Never leaves the sandbox behind: cleanup runs on success, on
    /// failure and on cancellation (SIGINT/SIGTERM cancel the calling task).
    public static func run(_ configuration: VerifyConfiguration) async throws(VerifyError) -> VerifyResult {
        let (engine, tools) = try configuration.prepared()
        let sandbox = Sandbox(stateRoot: configuration.stateRoot)
        var configuration = configuration
        configuration.profile.dns = configuration.profile.sandboxDNS(for: configuration.engine)
        return try await SandboxRunner.run(VerifySession(configuration: configuration, engine: engine, tools: tools, sandbox: sandbox),
                                           dnsServers: configuration.profile.dns)
    }
}

extension VerifySession: SandboxSession {
    mutating func noteStopped(_ message: String) { diagnostics.errors.append(message) }
}

/// The state of one run while it goes through its phases.
struct VerifySession {
    let configuration: VerifyConfiguration
    let engine: Engine
    let tools: Tools
    let sandbox: Sandbox
    let clock = ContinuousClock()
    let origin: ContinuousClock.Instant

    var phases: [VerifyResult.Phase] = []
    var failure: VerifyResult.Failure?
    var handshake = VerifyResult.Handshake(ok: false)
    var exitIP: VerifyResult.ExitIP
    var dnsLeak: VerifyResult.DNSLeak
    var ipv6Leak: VerifyResult.Leak
    var tunnelFailure: VerifyResult.Leak
    var captureSummary: VerifyResult.Capture?
    var diagnostics: VerifyResult.Diagnostics
    var engineArgv: [String] = []
    var handshakeAt: ContinuousClock.Instant?
    /// What the engine's log says about the resolver (Engine.resolverEvidence), for the reason of failed checks.
    var resolverEvidence: String?
    var interrupted = false
    /// The first data's time and the bulk download's figures (Transfer.swift).
    var transfer: VerifyResult.Transfer?
    /// Which check each uplink packet is evidence for; its windows and names are filled in as the
    /// checks run.
    var evidence: EvidenceRule
    /// dnstt over UDP: the carrier in both directions, whose answers name a handshake timeout's cause.
    var dnsttCarrier: DnsttCarrierCapture?

    init(configuration: VerifyConfiguration, engine: Engine, tools: Tools, sandbox: Sandbox) {
        self.configuration = configuration
        self.engine = engine
        self.tools = tools
        self.sandbox = sandbox
        evidence = EvidenceRule(ipv6Target: configuration.ipv6Target)
        origin = clock.now
        let checks = configuration.checks
        exitIP = VerifyResult.ExitIP(url: configuration.whoami?.description, expected: configuration.profile.expectedExitIP)
        dnsLeak = VerifyResult.DNSLeak(requested: checks.contains(.dnsLeak), servers: configuration.profile.dns, names: [],
                                       answered: 0, evidence: [])
        ipv6Leak = VerifyResult.Leak(requested: checks.contains(.ipv6Leak), evidence: [])
        tunnelFailure = VerifyResult.Leak(requested: checks.contains(.tunnelFailure), evidence: [])
        diagnostics = VerifyResult.Diagnostics(phase: "sandbox", routeLoops: [], errors: [])
    }

    var elapsedMs: Int { (clock.now - origin).milliseconds }

    /// The engine's log: kept with the report when the command says where, in the sandbox otherwise.
    var engineLogPath: String { configuration.engineLogPath ?? sandbox.directory + "/engine.log" }

    mutating func record(_ name: String, started: ContinuousClock.Instant, ok: Bool, detail: String? = nil) {
        phases.append(VerifyResult.Phase(name: name, startedMs: (started - origin).milliseconds,
                                         durationMs: (clock.now - started).milliseconds, ok: ok, detail: detail))
        diagnostics.phase = name
    }

    mutating func fail(_ phase: String, started: ContinuousClock.Instant, reason: String, words: [String] = [], exit: Int32? = nil) {
        record(phase, started: started, ok: false, detail: reason)
        failure = VerifyResult.Failure(phase: phase, reason: reason, engineWords: words, exitCode: exit)
        diagnostics.errors.append(reason)
    }

    // MARK: - phases

    mutating func execute() async {
        let capture: UplinkCapture?
        do {
            capture = try await UplinkCapture.start(namespacePath: sandbox.namespacePath, interface: sandbox.uplink,
                                                    path: configuration.capturePath ?? sandbox.directory + "/uplink.pcap", origin: origin)
        } catch {
            capture = nil
            diagnostics.errors.append(error.message)
        }
        if engine.dnstt?.transport == .udp, let resolver = engine.carriers.first, let domain = engine.carrierDomain {
            do {
                dnsttCarrier = try await DnsttCarrierCapture.start(
                    namespacePath: sandbox.namespacePath, interface: sandbox.uplink,
                    path: configuration.capturePath.map(DnsttCarrierCapture.path(beside:)) ?? sandbox.directory + "/carrier.pcap",
                    resolver: resolver, domain: domain)
            } catch {
                diagnostics.errors.append(error.message)
            }
        }
        await phases(capture: capture)
        if let dnsttCarrier { _ = await dnsttCarrier.stop() }
        if let capture { await summarize(capture.stop()) }
        // The leak verdicts come from the capture, so the checks phase is judged only now.
        if let index = phases.lastIndex(where: { $0.name == "checks" }) { phases[index].ok = checksPassed }
        await fillDiagnostics()
    }

    mutating func phases(capture: UplinkCapture?) async {
        // engine started
        var started = clock.now
        guard let program = tools.engine else { return }
        engineArgv = [tools.ip, "netns", "exec", sandbox.namespace] + engine.argv(program: program, sandbox: sandbox)
        do {
            try engine.prepare(sandbox: sandbox)
        } catch {
            fail("engine", started: started, reason: error.message)
            return
        }
        sandbox.recordStep("engine")
        let process = EngineProcess(argv: engineArgv, log: engineLogPath)
        let pid = await enginePID(process: process, deadline: clock.now + .seconds(2))
        guard let pid else {
            let code = await process.waitForExit(timeout: .milliseconds(500))
            let log = process.logText
            // An engine that got as far as the handshake before it exited fails there, in its own words.
            if case .failed(let reason, let words) = await engine.handshake(log: log, sandbox: sandbox, tools: tools) {
                record("engine", started: started, ok: true, detail: "started, exited with status \(code.map(String.init) ?? "?")")
                fail("handshake", started: clock.now, reason: reason, words: [words] + Host.lastLines(log, count: 3), exit: code)
                return
            }
            fail("engine", started: started, reason: "engine exited at start" + (code.map { " with status \($0)" } ?? "")
                    + (engine.exitWords(log: log).map { ": \($0)" } ?? ""),
                 words: Host.lastLines(log, count: 5), exit: code)
            return
        }
        await remember(pid: pid)
        record("engine", started: started, ok: true, detail: "pid \(pid)")

        // TUN up with its address
        started = clock.now
        let deadline = PhaseTiming(deadline: configuration.deadline, handshake: configuration.overrides.handshakeDeadline).handshakeDeadline(tunStart: started)
        // A SOCKS-shaped engine started without `{tun}` has no TUN: the sandbox is a host that
        // uses the proxy, and its routes stay those of the device's network.
        let usesTUN = engine.usesTUN(socks: configuration.socks)
        if !usesTUN {
            record("tun", started: started, ok: true, detail: "not used: SOCKS-shaped engine without {tun}")
            record("routes", started: clock.now, ok: true, detail: "not changed: the engine has no TUN")
            await handshakeAndChecks(process: process, pid: pid, capture: capture, deadline: deadline, usesTUN: false)
            return
        }
        do {
            try await engine.configure(sandbox: sandbox, tools: tools, deadline: deadline)
        } catch {
            fail("tun", started: started, reason: error.message, words: Host.lastLines(process.logText, count: 5))
            return
        }
        var previous: String?
        while true {
            // Engines set the address and the netmask in separate steps, and each step drops the
            // routes through the device: the address counts once two reads agree.
            if let address = await sandbox.tunAddress(tools: tools) {
                if address == previous {
                    diagnostics.tunAddress = address
                    break
                }
                previous = address
                try? await clock.sleep(for: .milliseconds(50))
                continue
            }
            if await engineEnded(process, phase: "tun", started: started) { return }
            guard clock.now < deadline else {
                // Engines such as iodine configure the TUN only once their handshake is done: when the
                // log says the handshake is what is stuck (resolver unreachable, ...), that phase failed.
                let log = process.logText
                if let hint = engine.handshakeStuck(log: log) {
                    record("tun", started: started, ok: false, detail: "no address: the engine never finished its handshake")
                    fail("handshake", started: started, reason: hint.reason, words: [hint.line] + Host.lastLines(log, count: 3))
                    return
                }
                fail("tun", started: started, reason: "the TUN got no address within \(configuration.deadline)",
                     words: Host.lastLines(log, count: 5))
                return
            }
            if Task.isCancelled { interrupted = true; return }
            try? await clock.sleep(for: configuration.pollInterval)
        }
        record("tun", started: started, ok: true, detail: "\(sandbox.tunDevice) \(diagnostics.tunAddress ?? "")")

        // routes as a packet-tunnel client sets them, and the route-loop diagnosis
        started = clock.now
        let carriers = engine.carriers.map(\.host)
        do {
            try await sandbox.applyTunnelRoutes(carriers: carriers, excludeCarriers: configuration.excludeCarriers,
                                                claimIPv6: configuration.profile.claimIPv6, tools: tools)
        } catch {
            fail("routes", started: started, reason: error.message)
            return
        }
        let loops = await sandbox.routeLoops(carriers: carriers, tools: tools)
        diagnostics.routeLoops = loops
        guard loops.isEmpty else {
            fail("routes", started: started,
                 reason: "route loop: the carrier would be routed into its own tunnel (\(loops.joined(separator: ", "))); exclude the resolver/server addresses from the tunnel's routes")
            return
        }
        record("routes", started: started, ok: true,
               detail: "default via \(sandbox.tunDevice)\(configuration.profile.claimIPv6 ? " (IPv4 and IPv6)" : " (IPv4 only)"); excluded \(Set(carriers).sorted().joined(separator: ", "))")

        await handshakeAndChecks(process: process, pid: pid, capture: capture, deadline: deadline, usesTUN: true)
    }

    /// Why data may not cross after a done handshake: the engine's hint, and for dnstt over UDP
    /// the truncated answers on the wire (the carrier capture ends here: the run is failing); with
    /// no log, only the wire's.
    func stallHint(log: String?) async -> String {
        var hints: [String] = []
        if let carrier = dnsttCarrier, let truncation = await carrier.stop().truncationEvidence { hints.append(truncation) }
        if let log, let hint = engine.dataStallHint(log: log) { hints.append(hint) }
        return hints.map { "; \($0)" }.joined()
    }

    mutating func handshakeAndChecks(process: EngineProcess, pid: Int32, capture: UplinkCapture?,
                                     deadline: ContinuousClock.Instant, usesTUN: Bool) async {
        let carriers = engine.carriers.map(\.host)
        // handshake evidence
        var started = clock.now
        while true {
            let log = process.logText
            switch await engine.handshake(log: log, sandbox: sandbox, tools: tools) {
            case .done(let evidence):
                handshakeAt = clock.now
                handshake = VerifyResult.Handshake(ok: true, evidence: evidence, timeMs: (clock.now - origin).milliseconds)
                record("handshake", started: started, ok: true, detail: evidence)
            case .failed(let reason, let words):
                fail("handshake", started: started, reason: reason, words: [words] + Host.lastLines(log, count: 3),
                     exit: process.exitStatus)
                return
            case .pending:
                if await engineEnded(process, phase: "handshake", started: started) { return }
                guard clock.now < deadline else {
                    var (reason, words) = engine.timeoutReason(log: log)
                    if let carrier = dnsttCarrier {
                        // The answers on the wire tell apart what the client's log cannot; a control
                        // query tells a silent resolver from one silent only for the tunnel's domain.
                        await DnsttCarrierTally.sendControlQuery(resolver: carrier.resolver, namespacePath: sandbox.namespacePath, wait: .seconds(2))
                        let tally = await carrier.stop()
                        if let named = tally.handshakeFailure(resolver: carrier.resolver, domain: carrier.domain) { reason = named }
                    }
                    fail("handshake", started: started, reason: reason, words: (words.map { [$0] } ?? []) + Host.lastLines(log, count: 3))
                    return
                }
                if Task.isCancelled { interrupted = true; return }
                try? await clock.sleep(for: configuration.pollInterval)
                continue
            }
            break
        }

        // The sandbox's TCP into the engine's SOCKS5 listener (the seed's packet-flow bridge).
        var bridged = false
        if configuration.bridgeTCP, let socks = configuration.socks {
            let bridgeStart = clock.now
            do {
                let redsocks = try Host.require("redsocks", package: "redsocks")
                let bridge = PacketBridge(sandbox: sandbox, socks: socks, carriers: engine.carriers)
                _ = try await bridge.start(tools: tools, redsocks: redsocks, deadline: clock.now + .seconds(5))
                bridged = true
                record("bridge", started: bridgeStart, ok: true,
                       detail: "IPv4 TCP into \(sandbox.tunDevice) -> redsocks 127.0.0.1:\(PacketBridge.port) -> SOCKS5 \(socks); carriers and loopback not redirected")
            } catch {
                fail("bridge", started: bridgeStart, reason: error.message)
                return
            }
        }

        // Routes again, idempotently, in case the engine reconfigured the TUN during the handshake.
        if usesTUN { do {
            try await sandbox.applyTunnelRoutes(carriers: carriers, excludeCarriers: configuration.excludeCarriers,
                                                claimIPv6: configuration.profile.claimIPv6, tools: tools)
        } catch {
            diagnostics.errors.append(error.message)
        } }

        // data through the tunnel
        started = clock.now
        let before = await sandbox.tunCounters()
        if let whoami = configuration.whoami {
            // GETs until one is answered or the data phase's own deadline passes (PhaseTiming).
            let dataDeadline = PhaseTiming(deadline: configuration.deadline, handshake: configuration.overrides.handshakeDeadline).dataDeadline(handshake: clock.now)
            // Bridged, the GET is a plain connection, as any app's: the bridge must carry it.
            let probeSOCKS = bridged ? nil : configuration.socks
            var result = await SandboxProbes.httpGet(url: whoami, socks: probeSOCKS, namespacePath: sandbox.namespacePath,
                                                     timeout: PhaseTiming.dataProbeTimeout)
            while case .failure = result, clock.now < dataDeadline, !Task.isCancelled {
                try? await clock.sleep(for: configuration.pollInterval)
                result = await SandboxProbes.httpGet(url: whoami, socks: probeSOCKS, namespacePath: sandbox.namespacePath,
                                                     timeout: PhaseTiming.dataProbeTimeout)
            }
            let after = await sandbox.tunCounters()
            let carried = !engine.carriesDataOnTUN(socks: configuration.socks) || (before.flatMap { b in after.map { a in a.up > b.up && a.down > b.down } } ?? false)
            switch result {
            case .success(let body) where carried:
                exitIP.observed = body.split(whereSeparator: \.isNewline).first.map(String.init)
                let path = bridged ? "the bridge (redsocks) and SOCKS5 \(configuration.socks?.description ?? "")"
                    : configuration.socks.map { "SOCKS5 \($0)" + (usesTUN ? " and \(sandbox.tunDevice)" : "") } ?? sandbox.tunDevice
                record("data", started: started, ok: true, detail: "GET \(whoami) through \(path): \(exitIP.observed ?? "")")
                guard await measureTransfer(dataStarted: started, process: process, bridged: bridged) else { return }
            case .success:
                fail("data", started: started, reason: "the answer from \(whoami) did not come through the TUN: traffic goes around the tunnel")
                return
            case .failure(let problem):
                let hint = await stallHint(log: process.logText)
                fail("data", started: started, reason: "handshake done but no data: \(problem)\(hint)",
                     words: Host.lastLines(process.logText, count: 3))
                return
            }
        } else {
            record("data", started: started, ok: false, detail: "not measured: no --whoami-url")
        }

        // checks
        started = clock.now
        await checks(process: process, pid: pid, capture: capture)
        record("checks", started: started, ok: checksPassed)
    }

    var checksPassed: Bool { failedChecks.isEmpty }

    /// Every requested check that did not pass, each with why, in the order the page lists them.
    var failedChecks: [String] {
        let checks = configuration.checks
        var failed: [String] = []
        if checks.contains(.exitIP), exitIP.ok != true {
            if exitIP.ok == false {
                failed.append("exit IP \(exitIP.observed ?? "-"), expected \(exitIP.expected ?? "-")")
            } else if exitIP.expected == nil, configuration.whoami != nil {
                failed.append("exit IP not verified: the profile has no expectedExitIP (observed \(exitIP.observed ?? "nothing"); set it, or leave exitIP out of --checks)")
            } else {
                failed.append("exit IP not verified: \(exitIP.note ?? "the run ended before the check")")
            }
        }
        if checks.contains(.dnsLeak) {
            if dnsLeak.leaked == true {
                let queries = dnsLeak.evidence.compactMap(\.query)
                var text = "DNS leak: \(dnsLeak.evidence.count) quer\(dnsLeak.evidence.count == 1 ? "y" : "ies") outside the tunnel"
                if !queries.isEmpty { text += " (\(queries.prefix(3).joined(separator: ", "))\(queries.count > 3 ? ", ..." : ""))" }
                if let unexpected = dnsLeak.unexpectedResolvers, !unexpected.isEmpty {
                    text += (dnsLeak.evidence.isEmpty ? "" : ";") + " names resolved by \(unexpected.joined(separator: ", "))"
                }
                failed.append(text)
            } else if dnsLeak.leaked == nil {
                failed.append("DNS leak not measured: \(dnsLeak.note ?? "the run ended before the check")")
            }
            if dnsLeak.resolves == false {
                failed.append("DNS does not resolve through the tunnel: \(dnsLeak.answered) of \(dnsLeak.names.count) names answered via \(dnsLeak.servers.joined(separator: ", "))")
            }
        }
        if checks.contains(.ipv6Leak), ipv6Leak.leaked != false {
            failed.append(ipv6Leak.leaked == true ? "IPv6 leak: \(ipv6Leak.evidence.count) packet(s) outside the tunnel"
                          : "IPv6 leak not measured: \(ipv6Leak.note ?? "the run ended before the check")")
        }
        if checks.contains(.tunnelFailure), tunnelFailure.leaked != false {
            failed.append(tunnelFailure.leaked == true
                          ? "tunnel failure: \(tunnelFailure.evidence.count) packet(s) left the device after the engine died"
                          : "tunnel failure not measured: \(tunnelFailure.note ?? "the run ended before the check")")
        }
        return failed
    }

    /// The engine's pid once it runs inside the sandbox (the only process there).
    func enginePID(process: EngineProcess, deadline: ContinuousClock.Instant) async -> Int32? {
        while clock.now < deadline {
            if process.exitStatus != nil { return nil }
            if let outcome = try? await Host.run([tools.ip, "netns", "pids", sandbox.namespace]),
               let pid = outcome.output.split(whereSeparator: \.isWhitespace).compactMap({ Int32($0) }).first {
                return pid
            }
            try? await clock.sleep(for: .milliseconds(10))
        }
        return nil
    }

    func remember(pid: Int32) async {
        guard var state = SandboxState.load(sandbox.directory) else { return }
        state.processes.append(.init(role: "engine", pid: pid, startTime: Host.startTime(of: pid) ?? 0))
        try? state.save(sandbox.directory)
    }

    /// Fails the phase when the engine has exited, with its status and last words.
    mutating func engineEnded(_ process: EngineProcess, phase: String, started: ContinuousClock.Instant) async -> Bool {
        guard let code = process.exitStatus else { return false }
        let log = process.logText
        if case .failed(let reason, let words) = await engine.handshake(log: log, sandbox: sandbox, tools: tools) {
            // The engine's words say the session was refused: that is the handshake failing, even
            // when it happens before the TUN is configured (iodine logs in first).
            if phase != "handshake" { record(phase, started: started, ok: false, detail: "engine ended: \(reason)") }
            fail("handshake", started: phase == "handshake" ? started : clock.now, reason: reason,
                 words: [words] + Host.lastLines(log, count: 3), exit: code)
        } else {
            fail(phase, started: started, reason: "engine exited with status \(code)" + (engine.exitWords(log: log).map { ": \($0)" } ?? ""),
                 words: Host.lastLines(log, count: 5), exit: code)
        }
        return true
    }

    // MARK: - checks

    mutating func checks(process: EngineProcess, pid: Int32, capture: UplinkCapture?) async {
        let checks = configuration.checks
        if checks.contains(.exitIP) {
            if configuration.whoami == nil {
                exitIP.note = "not measured: no --whoami-url"
            } else if let expected = exitIP.expected {
                exitIP.ok = exitIP.observed == expected
            } else {
                exitIP.note = "no expectedExitIP in the profile: observed only"
            }
        }
        var generator = SplitMix64(seed: configuration.seed)
        // DNS and IPv6 traffic go out together; the capture tells them apart afterwards, by the names
        // and ports each check used first and by time second (EvidenceRule).
        if checks.contains(.dnsLeak) || checks.contains(.ipv6Leak) { evidence.checksStart = clock.now - origin }
        if checks.contains(.dnsLeak) {
            if configuration.profile.dns.isEmpty, configuration.socks == nil {
                dnsLeak.note = "not measured: the profile sets no DNS servers"
            } else {
                var names: [String] = []
                var queries: [[UInt8]] = []
                var marks: [[UInt8]] = []
                for _ in 0..<configuration.leakNames {
                    let id = UInt16(truncatingIfNeeded: generator.next())
                    if let zone = configuration.leakZone {
                        // Nonces come from the system CSPRNG (the protocol forbids repeats).
                        var system = SystemRandomNumberGenerator()
                        let nonce = (0..<8).map { _ in UInt8.random(in: 0...255, using: &system) }
                        guard let name = zone.markName(nonce: nonce) else { continue }
                        marks.append(nonce)
                        names.append(name)
                        if let query = DNSQuery.make(id: id, name: name, type: 1) { queries.append(query) }
                    } else {
                        let label = String((0..<16).map { _ in Array("abcdefghijklmnopqrstuvwxyz234567")[Int(generator.next() % 32)] })
                        let name = "\(label).\(configuration.leakDomain)"
                        names.append(name)
                        if let query = DNSQuery.make(id: id, name: name, type: 1) { queries.append(query) }
                    }
                }
                dnsLeak.names = names
                evidence.dnsLeakNames = Set(names.map(Self.normalized))
                let path = sandbox.namespacePath
                let frozen = queries
                let servers = configuration.profile.dns
                // A name counts as answered when any server answered it (NXDOMAIN included: the names
                // are new, so any answer came from a resolver that could reach the DNS).
                // The Go edition's DNS listener answers only from its cache: a miss is sent through the
                // tunnel and not answered (internal/client/dns_listener.go), so the query is asked
                // again as a stub resolver retries (resolv.conf `attempts`); the Python edition's
                // waits for the tunnel's answer (client.py _local_dns_worker), and a retry costs nothing.
                let attempts = engine.kind == .masterdnsvpn ? 3 : 1
                var answered = Set<UInt16>()
                for _ in 0..<attempts where answered.count < frozen.count {
                    answered.formUnion(await withTaskGroup(of: Set<UInt16>.self) { group in
                        for server in servers {
                            group.addTask {
                                Set(await SandboxProbes.dnsQueries(frozen, server: server, namespacePath: path, wait: .milliseconds(1500)).keys)
                            }
                        }
                        var ids = Set<UInt16>()
                        for await answeredIDs in group { ids.formUnion(answeredIDs) }
                        return ids
                    })
                }
                dnsLeak.answered = answered.count
                if !servers.isEmpty { dnsLeak.resolves = answered.count == names.count && !names.isEmpty }
                if let socks = configuration.socks {
                    // A SOCKS-shaped engine must resolve names remotely: any local query is a leak.
                    _ = await SandboxProbes.socksResolve(names: names, socks: socks, namespacePath: path, timeout: .seconds(2))
                }
                if let zone = configuration.leakZone, let server = servers.first {
                    dnsLeak.resolversSeen = await zone.fetch(marks: marks, server: server, namespacePath: path, generator: &generator)
                }
            }
        }
        if checks.contains(.ipv6Leak) {
            await SandboxProbes.poke(host: configuration.ipv6Target, port: evidence.ipv6CheckPort, namespacePath: sandbox.namespacePath,
                                     wait: .milliseconds(300))
        }

        if checks.contains(.tunnelFailure) {
            // The engine dies; an app keeps talking. Whatever leaves the uplink now escaped.
            evidence.failureStart = clock.now - origin
            Host.signal(pid, ProcessControl.killSignal)
            _ = await process.waitForExit(timeout: .seconds(1))
            try? await clock.sleep(for: .milliseconds(100))
            if let whoami = configuration.whoami {
                await SandboxProbes.poke(host: whoami.host, port: whoami.port, namespacePath: sandbox.namespacePath, wait: .milliseconds(300))
            }
            if let server = configuration.profile.dns.first {
                let name = "failure\(generator.next() % 1_000_000).\(configuration.leakDomain)"
                evidence.failureNames.insert(Self.normalized(name))
                let query = DNSQuery.make(id: UInt16(truncatingIfNeeded: generator.next()), name: name, type: 1)
                _ = await SandboxProbes.dnsQueries(query.map { [$0] } ?? [], server: server, namespacePath: sandbox.namespacePath,
                                                   wait: .milliseconds(300))
            }
            await SandboxProbes.poke(host: configuration.ipv6Target, port: evidence.failurePort, namespacePath: sandbox.namespacePath,
                                     wait: .milliseconds(100))
        }
        if capture == nil {
            for note in ["not measured: no uplink capture"] {
                if dnsLeak.requested, dnsLeak.note == nil { dnsLeak.note = note }
                if ipv6Leak.requested { ipv6Leak.note = note }
                if tunnelFailure.requested { tunnelFailure.note = note }
            }
        }
    }

    /// Classifies every captured frame and decides the leak checks from the wire: each non-carrier
    /// packet is evidence for at most one check (EvidenceRule).
    mutating func summarize(_ frames: [UplinkCapture.Frame]) {
        let packets = frames.map {
            UplinkPacket.decode($0.bytes, atMs: $0.offset.milliseconds, carriers: engine.carriers, carrierDomain: engine.carrierDomain)
        }
        let nonCarrier = packets.filter { $0.kind != .carrier && $0.kind != .linkControl }
        captureSummary = VerifyResult.Capture(
            interface: sandbox.uplink, file: configuration.capturePath, packets: packets.count, carrier: packets.filter { $0.kind == .carrier }.count,
            linkControl: packets.filter { $0.kind == .linkControl }.count, nonCarrier: nonCarrier)
        let owners = zip(frames, packets).map { frame, packet in (evidence.owner(of: packet, at: frame.offset), packet) }
        func owned(by owner: EvidenceRule.Owner) -> [UplinkPacket] { owners.filter { $0.0 == owner }.map(\.1) }
        if dnsLeak.requested, dnsLeak.note == nil, evidence.checksStart != nil {
            dnsLeak.evidence = owned(by: .dnsLeak)
            // The leak zone's record names the resolvers that asked; one outside the expected set
            // leaked even when its query left through the tunnel's carrier resolver.
            let unexpected = configuration.expectedResolvers.isEmpty ? []
                : (dnsLeak.resolversSeen ?? []).filter { !configuration.expectedResolvers.contains($0) }
            dnsLeak.unexpectedResolvers = unexpected
            dnsLeak.leaked = !dnsLeak.evidence.isEmpty || !unexpected.isEmpty
        }
        if ipv6Leak.requested, ipv6Leak.note == nil, evidence.checksStart != nil {
            ipv6Leak.evidence = owned(by: .ipv6Leak)
            ipv6Leak.leaked = !ipv6Leak.evidence.isEmpty
        }
        if tunnelFailure.requested, tunnelFailure.note == nil {
            if evidence.failureStart != nil {
                tunnelFailure.evidence = owned(by: .tunnelFailure)
                tunnelFailure.leaked = !tunnelFailure.evidence.isEmpty
            } else {
                tunnelFailure.note = "not measured: the run ended before the check (see failure)"
            }
        }
        if dnsLeak.requested, dnsLeak.leaked == nil, dnsLeak.note == nil { dnsLeak.note = "not measured: the run ended before the check" }
        if ipv6Leak.requested, ipv6Leak.leaked == nil, ipv6Leak.note == nil { ipv6Leak.note = "not measured: the run ended before the check" }
    }

    /// A query name as EvidenceRule compares it: lowercase, no trailing dot.
    static func normalized(_ name: String) -> String {
        let lowered = name.lowercased()
        return lowered.hasSuffix(".") ? String(lowered.dropLast()) : lowered
    }

    mutating func fillDiagnostics() async {
        let log = Host.readText(engineLogPath) ?? ""
        let found = engine.diagnostics(log: log)
        if engine.kind == .masterdnsvpn {
            var details = EngineDiagnostics.masterDnsVPN(log: log, edition: engine.edition ?? .go, carrier: nil, fec: engine.masterdns?.fec)
            if let captureSummary {
                details.packetsUp = captureSummary.carrier
                details.unavailable["packetsUp"] = nil
                details.sources["packetsUp"] = "uplink capture: carrier queries to the resolvers"
                details.unavailable["packetsDown"] = "the client has no packet counter and the uplink capture keeps outbound packets only"
            }
            diagnostics.engine = details
        }
        resolverEvidence = engine.resolverEvidence(log: log)
        diagnostics.selectedResolver = found.resolver
        diagnostics.session = found.session
        if let counters = await sandbox.tunCounters() {
            diagnostics.tunPacketsUp = counters.up
            diagnostics.tunPacketsDown = counters.down
        }
        if Task.isCancelled { interrupted = true }
    }

    func report() -> VerifyResult {
        let end = elapsedMs
        let verdict: Verdict = interrupted ? .incomplete : (failure == nil && checksPassed ? .pass : .fail)
        let reason: String? = switch verdict {
        case .pass: nil
        case .incomplete: "interrupted" + (failure.map { " at \($0.phase)" } ?? "")
        // Checks that failed behind a resolver the engine's log describes (iodine behind a
        // QNAME-minimising one) say so: the check's own words alone would blame the wrong thing.
        case .fail: failure.map { "failed at \($0.phase): \($0.reason)" }
            ?? (failedChecks + (resolverEvidence.map { [$0] } ?? [])).joined(separator: "; ")
        }
        let redacted = engineArgv.enumerated().map { index, word in
            index > 0 && engineArgv[index - 1] == "-P" ? "********" : word
        }
        return VerifyResult(
            profile: configuration.profile.name, engine: configuration.engine.rawValue, engineCommand: redacted,
            sandbox: sandbox.namespace, phases: phases, failure: failure, handshake: handshake, exitIP: exitIP,
            dnsLeak: dnsLeak, ipv6Leak: ipv6Leak, tunnelFailure: tunnelFailure, capture: captureSummary,
            diagnostics: diagnostics,
            timing: VerifyResult.Timing(startToVerdictMs: end, handshakeMs: handshake.timeMs,
                                        afterHandshakeMs: handshakeAt.map { (clock.now - $0).milliseconds }),
            verdict: verdict, reason: reason, transfer: transfer)
    }
}

/// A recursive query with one question (RFC 1035 4.1), built with DNSWire; nil for a name DNS cannot
/// carry (the names here are made by the run or read from a checked profile, so that is a bug).
enum DNSQuery {
    static func make(id: UInt16, name: String, type: UInt16) -> [UInt8]? {
        try? DNSMessage.query(id: id, name: name, type: DNSType(type)).serialized()
    }
}
