public import Base
import Foundation
import OSLayer
public import Results

/// The disruptions `resilience` can inflict while the probe flow runs.
public enum DisruptionKind: String, Sendable, Hashable, CaseIterable {
    /// The sandbox's uplink goes down for T seconds, then up again.
    case uplinkDown = "uplink-down"
    /// The uplink moves to a new address and gateway (a phone changing networks).
    case addressChange = "address-change"
    /// The engine's resolver stops answering for T seconds.
    case resolverOutage = "resolver-outage"
    /// The tool kills the engine (SIGKILL) and starts it again.
    case engineRestart = "engine-restart"
}

public struct ResilienceConfiguration: EngineRunConfiguration {
    public var profile: Profile
    public var engine: EngineKind
    public var overrides: EngineOverrides
    public var whoami: WhoamiURL
    public var seed: UInt64
    public var stateRoot = Sandbox.defaultStateRoot
    /// Deadline for one engine start (launch to first data).
    public var deadline: Duration = .seconds(25)
    /// Engine up/down cycles before the scenarios.
    public var cycles = 0
    public var disruptions: [DisruptionKind] = []
    /// Outage lengths for uplink-down and resolver-outage.
    public var outages: [Duration] = [.seconds(1), .seconds(5)]
    /// How long after a disruption ends the probe flow waits for traffic before it gives up.
    public var recoveryBound: Duration = .seconds(30)
    public var probeInterval: Duration = .milliseconds(100)
    public var probeTimeout: Duration = .seconds(1)
    /// Probes before each disruption (the tunnel must carry traffic before it is disrupted).
    public var baseline: Duration = .seconds(1)
    /// More reconnect attempts than this per minute of a scenario is a storm.
    public var stormThresholdPerMinute = 30.0
    /// The routes actually applied for the split, when they differ from the profile's (to show
    /// that misrouting is caught); `nil` applies the profile's split.
    public var appliedSplit: Profile.Split?
    /// Where per-scenario captures and probe logs go.
    public var directory: String?
    /// The SOCKS5 port of a SOCKS-shaped engine inside the sandbox (as for `verify`): the first
    /// data of each start and the probe flow go through it. Without `{tun}` in the engine's
    /// command line the engine has no TUN: no TUN address, no tunnel routes, no split check.
    public var socks: Endpoint?
    /// Sends the sandbox's TCP into the SOCKS-shaped engine through redsocks (`PacketBridge`), as
    /// `verify` does and the seed's packet-flow bridge does: started after each engine start's
    /// handshake and stopped with the engine, so the first data and the probe flow are plain TCP
    /// connections, as an app's are. On for MasterDnsVPN.
    public var bridgeTCP: Bool

    public init(profile: Profile, engine: EngineKind, overrides: EngineOverrides = EngineOverrides(), whoami: WhoamiURL, seed: UInt64) {
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

/// Runs engine cycles and disruption scenarios in one sandbox (docs/RESILIENCE.md).
public enum Resilience {
    /// Cycles, then scenarios. Cancellation (SIGINT) ends the current step, restores the uplink,
    /// removes the sandbox and returns what was measured, marked incomplete.
    public static func run(_ configuration: ResilienceConfiguration) async throws(VerifyError) -> ResilienceResult {
        let (engine, tools) = try configuration.prepared()
        let sandbox = Sandbox(stateRoot: configuration.stateRoot)
        var configuration = configuration
        configuration.profile.dns = configuration.profile.sandboxDNS(for: configuration.engine)
        return try await SandboxRunner.run(ResilienceSession(configuration: configuration, engine: engine, tools: tools, sandbox: sandbox),
                                           dnsServers: configuration.profile.dns)
    }
}

extension ResilienceSession: SandboxSession {
    mutating func noteStopped(_ message: String) { notes.append(message) }

    /// Keeps the engine's own words (reconnect attempts, its view of an outage) with the report, then
    /// restores the uplink.
    func afterwards() -> @Sendable () async -> Void {
        let finished = self
        return {
            if let directory = finished.configuration.directory, finished.starts > 0 {
                for start in 1...finished.starts {
                    let name = "/engine-\(start).log"
                    if let text = Host.readText(finished.sandbox.directory + name) { try? Host.writeFile(directory + name, text) }
                }
            }
            await finished.restoreUplink()
        }
    }
}

struct ResilienceSession: Sendable {
    let configuration: ResilienceConfiguration
    let engine: Engine
    let tools: Tools
    let sandbox: Sandbox
    let clock = ContinuousClock()
    var gateway: String
    var uplinkAddress: String
    var cycles: [ResilienceResult.Cycle] = []
    var leftovers: ResilienceResult.Leftovers?
    var scenarios: [ResilienceResult.Scenario] = []
    var notes: [String] = []
    /// Scenarios not run because the engine was gone and did not come back.
    var scenariosNotRun: [String] = []
    var interrupted = false
    var starts = 0
    var split: ResilienceResult.Split?
    /// Split domain -> the addresses it resolved to in the split check.
    var resolved: [String: [String]] = [:]
    /// The engine attaches to the sandbox's TUN (false for a SOCKS-shaped engine without `{tun}`).
    let usesTUN: Bool

    init(configuration: ResilienceConfiguration, engine: Engine, tools: Tools, sandbox: Sandbox) {
        self.configuration = configuration
        self.engine = engine
        self.tools = tools
        self.sandbox = sandbox
        gateway = sandbox.hostAddress
        uplinkAddress = sandbox.uplinkAddress
        usesTUN = engine.usesTUN(socks: configuration.socks)
    }

    /// The packet-flow bridge of each start, when the run bridges the sandbox's TCP into the
    /// engine's SOCKS5 listener.
    var packetBridge: PacketBridge? {
        guard configuration.bridgeTCP, usesTUN, let socks = configuration.socks else { return nil }
        return PacketBridge(sandbox: sandbox, socks: socks, carriers: engine.carriers)
    }

    /// Where the probes send their GETs: the SOCKS5 proxy itself, or nowhere special when the
    /// bridge carries the sandbox's own connections into it (an app's plain connection).
    var probeSOCKS: Endpoint? { packetBridge == nil ? configuration.socks : nil }

    /// How the probes reach the whoami URL, for the report's words.
    var dataPath: String {
        switch (configuration.socks, usesTUN) {
        case (let socks?, true) where packetBridge != nil: "the bridge (redsocks 127.0.0.1:\(PacketBridge.port)) into the SOCKS5 proxy \(socks)"
        case (let socks?, true): "the SOCKS5 proxy \(socks) and \(sandbox.tunDevice)"
        case (let socks?, false): "the SOCKS5 proxy \(socks)"
        case (nil, _): "the TUN"
        }
    }

    /// One GET to the whoami URL the way the probe flow sends it.
    func probeOnce(timeout: Duration) async -> Result<String, SandboxProbeFailure> {
        await SandboxProbes.httpGet(url: configuration.whoami, socks: probeSOCKS, namespacePath: sandbox.namespacePath,
                                    timeout: timeout)
    }

    /// The tunnel's routes again (after the uplink lost or changed them); nothing without a TUN.
    func reapplyTunnelRoutes() async throws(VerifyError) {
        guard usesTUN else { return }
        try await sandbox.tunnelRoutes(carriers: carriers, gateway: gateway, claimIPv6: configuration.profile.claimIPv6,
                                       split: routedSplit, tools: tools)
    }

    struct Running: Sendable {
        var process: EngineProcess
        var pid: Int32
        var handshakeMs: Int
        var firstDataMs: Int
        /// The packet-flow bridge of this start and its phase (`startedMs` from the launch).
        var bridge: PacketBridge.Running?
        var bridgePhase: VerifyResult.Phase?
    }

    struct StartFailure: Error {
        var reason: String
        var process: EngineProcess?
        /// Milliseconds from the launch to the handshake, when the start got that far.
        var handshakeMs: Int?
        /// The bridge, when the start got as far as setting it up.
        var bridge: PacketBridge.Running?
        var bridgePhase: VerifyResult.Phase?
    }

    var carriers: [String] { engine.carriers.map(\.host) }
    var appliedSplit: Profile.Split? { configuration.appliedSplit ?? configuration.profile.split }
    /// The applied split with its domains' resolved addresses as host routes (none before the
    /// split check has resolved them).
    var routedSplit: SplitCheck.Routed? { appliedSplit.map { SplitCheck.Routed($0, resolved: resolved) } }

    // MARK: - engine up and down

    /// Launch, TUN address, routes, handshake, first answer through the TUN (or the SOCKS5 proxy);
    /// times from the launch. Without a TUN the TUN address and routes steps are skipped.
    mutating func start() async throws(StartFailure) -> Running {
        starts += 1
        let launched = clock.now
        let timing = PhaseTiming(deadline: configuration.deadline, handshake: configuration.overrides.handshakeDeadline)
        guard let program = tools.engine else { throw StartFailure(reason: "no engine program") }
        let argv = [tools.ip, "netns", "exec", sandbox.namespace] + engine.argv(program: program, sandbox: sandbox)
        do {
            try engine.prepare(sandbox: sandbox)
        } catch {
            throw StartFailure(reason: error.message)
        }
        sandbox.recordStep("engine")
        let process = EngineProcess(argv: argv, log: sandbox.directory + "/engine-\(starts).log")
        var pid: Int32?
        while clock.now < launched + .seconds(2), process.exitStatus == nil {
            if let outcome = try? await Host.run([tools.ip, "netns", "pids", sandbox.namespace]),
               let found = outcome.output.split(whereSeparator: \.isWhitespace).compactMap({ Int32($0) }).first {
                pid = found
                break
            }
            try? await clock.sleep(for: .milliseconds(10))
        }
        guard let pid else { throw StartFailure(reason: "engine exited at start: \(Host.lastLine(process.logText) ?? "")", process: process) }
        // verify's rule: the TUN and the handshake share one deadline from here (PhaseTiming).
        let deadline = timing.handshakeDeadline(tunStart: clock.now)
        if var state = SandboxState.load(sandbox.directory) {
            state.processes.append(.init(role: "engine", pid: pid, startTime: Host.startTime(of: pid) ?? 0))
            try? state.save(sandbox.directory)
        }
        do {
            try await engine.configure(sandbox: sandbox, tools: tools, deadline: deadline)
        } catch {
            throw StartFailure(reason: error.message, process: process)
        }
        // The address counts once two reads agree (engines set address and netmask in steps).
        var previous: String?
        while usesTUN {
            if let address = await sandbox.tunAddress(tools: tools) {
                if address == previous { break }
                previous = address
                try? await clock.sleep(for: .milliseconds(50))
                continue
            }
            if let code = process.exitStatus { throw StartFailure(reason: "engine exited with status \(code) before its TUN had an address", process: process) }
            if Task.isCancelled { throw StartFailure(reason: "interrupted", process: process) }
            guard clock.now < deadline else { throw StartFailure(reason: "the TUN got no address within \(configuration.deadline)", process: process) }
            try? await clock.sleep(for: .milliseconds(100))
        }
        do {
            try await reapplyTunnelRoutes()
        } catch {
            throw StartFailure(reason: error.message, process: process)
        }
        var handshakeMs: Int?
        var handshakeAt = clock.now
        while handshakeMs == nil {
            switch await engine.handshake(log: process.logText, sandbox: sandbox, tools: tools) {
            case .done:
                handshakeAt = clock.now
                handshakeMs = (handshakeAt - launched).milliseconds
            case .failed(let reason, _): throw StartFailure(reason: "handshake: \(reason)", process: process)
            case .pending:
                if let code = process.exitStatus { throw StartFailure(reason: "engine exited with status \(code) before the handshake", process: process) }
                if Task.isCancelled { throw StartFailure(reason: "interrupted", process: process) }
                guard clock.now < deadline else { throw StartFailure(reason: engine.timeoutReason(log: process.logText).reason, process: process) }
                try? await clock.sleep(for: .milliseconds(50))
            }
        }
        // Routes again, idempotently: an engine may reconfigure its TUN during the handshake.
        _ = try? await reapplyTunnelRoutes()
        // The packet-flow bridge, as verify sets it up: from here the sandbox's TCP into the TUN
        // goes through redsocks into the engine's SOCKS5 listener.
        var bridge: PacketBridge.Running?
        var bridgePhase: VerifyResult.Phase?
        if let packetBridge, let socks = configuration.socks {
            let begun = clock.now
            do {
                let redsocks = try Host.require("redsocks", package: "redsocks")
                bridge = try await packetBridge.start(tools: tools, redsocks: redsocks, deadline: clock.now + .seconds(5))
                bridgePhase = .init(name: "bridge", startedMs: (begun - launched).milliseconds, durationMs: (clock.now - begun).milliseconds, ok: true,
                                    detail: "IPv4 TCP into \(sandbox.tunDevice) -> redsocks 127.0.0.1:\(PacketBridge.port) -> SOCKS5 \(socks); carriers and loopback not redirected")
            } catch {
                let phase = VerifyResult.Phase(name: "bridge", startedMs: (begun - launched).milliseconds, durationMs: (clock.now - begun).milliseconds,
                                               ok: false, detail: error.message)
                throw StartFailure(reason: "bridge: \(error.message)", process: process, handshakeMs: handshakeMs, bridgePhase: phase)
            }
        }
        // First data counts only from the profile's exit (as in the probe flow): an answer that
        // came around the tunnel or the proxy is no data through it.
        let exit = configuration.profile.expectedExitIP
        let dataDeadline = timing.dataDeadline(handshake: handshakeAt)
        while true {
            if case .success(let body) = await probeOnce(timeout: PhaseTiming.dataProbeTimeout),
               exit == nil || body.split(whereSeparator: \.isNewline).first.map(String.init) == exit { break }
            if Task.isCancelled {
                throw StartFailure(reason: "interrupted", process: process, handshakeMs: handshakeMs, bridge: bridge, bridgePhase: bridgePhase)
            }
            guard clock.now < dataDeadline else {
                let hint = engine.dataStallHint(log: process.logText).map { "; \($0)" } ?? ""
                throw StartFailure(reason: "handshake done but no data through \(dataPath) within \(configuration.deadline) of it\(hint)", process: process,
                                   handshakeMs: handshakeMs, bridge: bridge, bridgePhase: bridgePhase)
            }
            try? await clock.sleep(for: .milliseconds(50))
        }
        return Running(process: process, pid: pid, handshakeMs: handshakeMs ?? 0, firstDataMs: (clock.now - launched).milliseconds,
                       bridge: bridge, bridgePhase: bridgePhase)
    }

    /// SIGTERM to the engine (SIGKILL after a second) and the time until it is gone. Only the
    /// engine: whatever it left running is for the leftover check to find (then `killStrays`).
    /// Without a pid (the engine never got one), everything in the sandbox goes. Then the
    /// packet-flow bridge goes with it (its redirect, then redsocks), as the device's packet tunnel
    /// goes with its VPN; the time returned is the engine's alone.
    func stop(_ process: EngineProcess?, pid: Int32?, bridge: PacketBridge.Running? = nil) async -> Int {
        let started = clock.now
        if let pid {
            await Host.terminate([pid])
        } else {
            await killStrays()
        }
        _ = await process?.waitForExit(timeout: .seconds(2))
        let stopped = (clock.now - started).milliseconds
        if let packetBridge {
            if let bridge {
                await packetBridge.stop(bridge, tools: tools)
            } else {
                await packetBridge.removeRedirect(tools: tools)
            }
        }
        return stopped
    }

    /// Every process still in the sandbox.
    func killStrays() async {
        guard let inode = Host.inode(sandbox.namespacePath) else { return }
        let victims = Host.processes(inNamespace: inode).filter { $0 != ProcessControl.currentID }
        if !victims.isEmpty { await Host.terminate(victims.sorted()) }
    }

    // MARK: - run

    mutating func execute() async {
        if !usesTUN {
            notes.append("no TUN: a SOCKS-shaped engine (--socks and no {tun} in its command line); first data and the probe flow went through \(dataPath), no TUN address was awaited and no tunnel routes were set or removed")
        }
        if configuration.cycles > 0 { await runCycles() }
        guard !interrupted, !configuration.disruptions.isEmpty || configuration.profile.split != nil else { return }
        let running: Running
        do {
            running = try await start()
        } catch {
            _ = await stop(error.process, pid: nil, bridge: error.bridge)
            if Task.isCancelled { interrupted = true; return }
            notes.append("the engine did not come up for the scenarios: \(error.reason)")
            return
        }
        var current = running
        if configuration.profile.split != nil {
            if usesTUN {
                await splitCheck()
            } else {
                notes.append("split check not run: a split decides which destinations are routed into the TUN, and this engine has no TUN (SOCKS-shaped); split: null")
            }
        }
        var planned: [(kind: DisruptionKind, length: Duration?)] = []
        for kind in configuration.disruptions {
            if kind == .resolverOutage, engine.carrierDomain == nil {
                notes.append("resolver-outage not run: \(engine.kind.rawValue) uses no resolver")
                continue
            }
            let lengths: [Duration?] = (kind == .uplinkDown || kind == .resolverOutage) ? configuration.outages.map { $0 } : [nil]
            planned += lengths.map { (kind: kind, length: $0) }
        }
        for (index, step) in planned.enumerated() {
            if Task.isCancelled { interrupted = true; break }
            // An engine that shut itself down (iodine after 60 s without downstream data) is no
            // engine to disrupt: the tool starts it again, or the remaining scenarios are not run.
            var restartNote: String?
            if let gone = await engineGone(current) {
                _ = await stop(current.process, pid: current.pid, bridge: current.bridge)
                await killStrays()
                do {
                    current = try await start()
                    restartNote = "before this scenario the engine had exited (\(gone)); the tool started it again (handshake \(current.handshakeMs) ms, first data \(current.firstDataMs) ms after the launch)"
                } catch {
                    _ = await stop(error.process, pid: nil, bridge: error.bridge)
                    if Task.isCancelled { interrupted = true; return }
                    let skipped = planned[index...].map { Self.scenarioName($0.kind, length: $0.length) }
                    scenariosNotRun += skipped
                    notes.append("the engine had exited (\(gone)) before \(skipped[0]) and did not come back (\(error.reason)); not run: \(skipped.joined(separator: ", "))")
                    await killStrays()
                    return
                }
            }
            if let next = await scenario(step.kind, length: step.length, running: current, restartNote: restartNote) { current = next } else { return }
        }
        _ = await stop(current.process, pid: current.pid, bridge: current.bridge)
        await killStrays()
    }

    static func scenarioName(_ kind: DisruptionKind, length: Duration?) -> String {
        kind.rawValue + (length.map { "-\(seconds($0))s" } ?? "")
    }

    /// How the engine of `running` ended, in words for the report ("status 0, its last line: ..."),
    /// or nil while it or a process it left runs in the sandbox (an
    /// engine that replaced itself is still an engine; the bridge's redsocks is not the engine).
    func engineGone(_ running: Running) async -> String? {
        guard let status = running.process.exitStatus else { return nil }
        if let outcome = try? await Host.run([tools.ip, "netns", "pids", sandbox.namespace]),
           outcome.output.split(whereSeparator: \.isWhitespace).contains(where: { Int32($0).map { $0 != running.bridge?.pid } ?? false }) { return nil }
        let last = Host.lastLine(running.process.logText).map { ", its last line: \"\($0)\"" } ?? ""
        return "status \(status)\(last)"
    }

    mutating func runCycles() async {
        var after: [Sandbox.Snapshot] = []
        var stray: [String] = []
        for index in 1...configuration.cycles {
            do {
                let running = try await start()
                let stopMs = await stop(running.process, pid: running.pid, bridge: running.bridge)
                cycles.append(.init(index: index, ok: true, handshakeMs: running.handshakeMs, firstDataMs: running.firstDataMs, stopMs: stopMs,
                                    bridge: running.bridgePhase))
            } catch {
                let stopMs = await stop(error.process, pid: nil, bridge: error.bridge)
                if Task.isCancelled { interrupted = true; break }
                cycles.append(.init(index: index, ok: false, handshakeMs: error.handshakeMs, stopMs: stopMs, failure: error.reason,
                                    bridge: error.bridgePhase))
            }
            if usesTUN { await sandbox.removeTunnelRoutes(carriers: carriers, split: routedSplit, tools: tools) }
            let snapshot = await sandbox.snapshot(tools: tools)
            stray += snapshot.processes.map { "after cycle \(index): \($0)" }
            after.append(snapshot)
            await killStrays()
        }
        guard let first = after.first, let last = after.last else { return }
        let namespaces = ((try? FileManager.default.contentsOfDirectory(atPath: "/run/netns")) ?? [])
            .filter { $0.hasPrefix(Sandbox.prefix) && $0.hasSuffix(sandbox.id) && $0 != sandbox.namespace }
        // Multiset difference: each entry of the last snapshot not matched by one of the first.
        func added(_ a: [String], _ b: [String]) -> [String] {
            var pool = a
            return b.filter { entry in
                if let index = pool.firstIndex(of: entry) { pool.remove(at: index); return false }
                return true
            }
        }
        leftovers = .init(processes: stray, tunDevices: added(first.tunDevices, last.tunDevices), routes: added(first.routes, last.routes),
                          sockets: added(first.sockets, last.sockets), namespaces: namespaces)
        if after.count == 1 { notes.append("one cycle only: leftovers are the engine processes after its stop, nothing to compare") }
    }

    // MARK: - scenarios

    /// One scenario: baseline probes, the disruption, probes until the first answer after it (or
    /// the bound), a short tail. Returns the engine to use next, `nil` when none runs any more.
    mutating func scenario(_ kind: DisruptionKind, length: Duration?, running: Running, restartNote: String? = nil) async -> Running? {
        let name = Self.scenarioName(kind, length: length)
        let origin = clock.now
        let directory = configuration.directory ?? sandbox.directory
        let capturePath = directory + "/uplink-\(name).pcap"
        var capture = try? await UplinkCapture.start(namespacePath: sandbox.namespacePath, interface: sandbox.uplink, path: capturePath, origin: origin)
        var frames: [UplinkCapture.Frame] = []
        var scenarioNotes: [String] = restartNote.map { [$0] } ?? []
        var captured = capture != nil
        if capture == nil { scenarioNotes.append("uplink not captured: leak verdict unknown") }
        let stopFlag = ProbeFlow.StopFlag()
        let url = configuration.whoami, path = sandbox.namespacePath
        let interval = configuration.probeInterval, timeout = configuration.probeTimeout, exit = configuration.profile.expectedExitIP
        // Bridged, the flow's GETs are plain connections, as an app's: the bridge must carry them.
        let socks = probeSOCKS
        let flow = Task { await ProbeFlow.run(url: url, socks: socks, namespacePath: path, origin: origin, interval: interval, timeout: timeout,
                                              expectedExit: exit, stop: stopFlag) }
        let logBefore = running.process.logText.split(whereSeparator: \.isNewline).count
        // With several resolvers, a second capture of the baseline tells which one is in use.
        var inUseCapture: UplinkCapture?
        if kind == .resolverOutage, engine.carriers.count > 1 {
            inUseCapture = try? await UplinkCapture.start(namespacePath: path, interface: sandbox.uplink,
                                                          path: directory + "/uplink-\(name)-baseline.pcap", origin: origin)
        }
        var blockedResolver: Endpoint?
        try? await clock.sleep(for: configuration.baseline)

        var current: Running? = running
        var restartedBy: String?
        /// The bridge phase of a restart that did not come back.
        var restartBridge: VerifyResult.Phase?
        let startMs = (clock.now - origin).milliseconds
        do {
            switch kind {
            case .uplinkDown:
                // A capture on a link that goes down ends; a fresh one starts when it is up again.
                if let live = capture { frames += await live.stop(); capture = nil }
                try await sandbox.setUplink(up: false, tools: tools)
                try? await clock.sleep(for: length ?? .seconds(1))
                try await sandbox.setUplink(up: true, tools: tools)
                try await sandbox.uplinkRoutes(gateway: gateway, tools: tools)
                try await reapplyTunnelRoutes()
                capture = try? await UplinkCapture.start(namespacePath: path, interface: sandbox.uplink,
                                                         path: directory + "/uplink-\(name)-after.pcap", origin: origin)
                if capture == nil {
                    captured = false
                    scenarioNotes.append("the uplink capture could not restart after the link came up: leak verdict unknown")
                }
            case .addressChange:
                let moved = try await sandbox.changeUplinkAddress(from: uplinkAddress, tools: tools)
                gateway = moved.gateway
                uplinkAddress = moved.address
                try await sandbox.uplinkRoutes(gateway: gateway, tools: tools)
                try await reapplyTunnelRoutes()
                scenarioNotes.append("uplink moved to \(moved.address) via \(moved.gateway)")
            case .resolverOutage:
                // The resolver in use: the one most of the baseline's tunnel queries went to.
                var resolver = engine.carriers.first
                if let probe = inUseCapture, let domain = engine.carrierDomain {
                    let seen = await probe.stop().map {
                        UplinkPacket.decode($0.bytes, atMs: $0.offset.milliseconds, carriers: engine.carriers, carrierDomain: domain)
                    }
                    inUseCapture = nil
                    resolver = ResolverFailover.inUse(seen, resolvers: engine.carriers, domain: domain) ?? resolver
                }
                guard let resolver else { break }
                blockedResolver = resolver
                try await sandbox.blockResolver(resolver, tools: tools)
                try? await clock.sleep(for: length ?? .seconds(1))
                await sandbox.unblockResolver(tools: tools)
            case .engineRestart:
                // SIGKILL: the engine gets no chance to tidy up, as when the system kills it.
                Host.signal(running.pid, ProcessControl.killSignal)
                _ = await running.process.waitForExit(timeout: .seconds(2))
                await killStrays()
                current = nil
                do {
                    current = try await start()
                    restartedBy = "tool"
                } catch {
                    scenarioNotes.append("the engine did not come back: \(error.reason)")
                    restartBridge = error.bridgePhase
                    _ = await stop(error.process, pid: nil, bridge: error.bridge)
                }
            }
        } catch {
            scenarioNotes.append("disruption failed: \(error.message)")
        }
        let endMs = (clock.now - origin).milliseconds
        // Probes until the first answer sent after the disruption, or the bound.
        let bound = origin + .milliseconds(endMs) + configuration.recoveryBound
        var recoveredProbe = false
        // Polled no faster than the flow itself, so that the poll adds no traffic of its own
        // beyond the flow's rate (an engine may wait for a quiet TUN before it retransmits).
        let poll = max(Duration.milliseconds(200), configuration.probeInterval)
        while clock.now < bound, !Task.isCancelled {
            try? await clock.sleep(for: poll)
            // The flow's own log is read at the end; here a direct probe tells when to stop waiting.
            if case .success = await probeOnce(timeout: timeout) { recoveredProbe = true; break }
        }
        if recoveredProbe { try? await clock.sleep(for: .milliseconds(500)) }
        if Task.isCancelled { interrupted = true }
        stopFlag.set()
        let probes = await flow.value
        if let live = capture { frames += await live.stop() }

        // The engine now: exited with nothing left running means it shut itself down (said, and the
        // next scenario starts it again); its pid gone with a process still running means it
        // restarted by itself.
        var exited: String?
        if let current { exited = await engineGone(current) }
        if let exited {
            scenarioNotes.append("the engine exited during the scenario (\(exited))")
        } else if restartedBy == nil, let current, Host.startTime(of: current.pid) == nil {
            restartedBy = "self"
        }
        let process = current?.process ?? running.process
        let logLines = process.logText.split(whereSeparator: \.isNewline).map(String.init)
        let newLines = restartedBy == "tool" ? logLines : Array(logLines.dropFirst(logBefore))
        let attempts = newLines.filter { line in Self.reconnectMarkers(engine.kind).contains { line.contains($0) } }.count
        let minutes = Double((clock.now - origin).milliseconds) / 60_000
        // A single attempt in a short scenario is no storm, whatever its rate.
        let storm = attempts >= 5 && minutes > 0 && Double(attempts) / minutes > configuration.stormThresholdPerMinute

        let packets = frames.map { UplinkPacket.decode($0.bytes, atMs: $0.offset.milliseconds, carriers: engine.carriers, carrierDomain: engine.carrierDomain) }
        let leaks = packets.filter { $0.kind != .carrier && $0.kind != .linkControl }
        if let probe = inUseCapture { _ = await probe.stop() }
        // An engine that reconfigures its TUN (a new session sets the address again) can take the
        // routes through it with it: then traffic meant for the tunnel leaves by the uplink
        // (the capture shows it). Said, and the routes set again for what follows.
        if usesTUN, current != nil, let device = await sandbox.routeDevice(to: url.host, tools: tools), device != sandbox.tunDevice {
            scenarioNotes.append("at the end of the scenario \(url.host) was routed through \(device), not the TUN: the routes through the TUN were gone (the engine reconfigured its TUN); the tool set them again")
            _ = try? await reapplyTunnelRoutes()
        }
        var failover: ResilienceResult.Failover?
        var failoverNote: String?
        if kind == .resolverOutage {
            failoverNote = ResolverFailover.notMeasurable(engine: engine.kind, carriers: engine.carriers,
                                                          profileResolvers: configuration.profile.resolvers.count)
            if failoverNote == nil {
                if let blocked = blockedResolver, let domain = engine.carrierDomain, captured {
                    failover = ResolverFailover.measure(packets, blocked: blocked, resolvers: engine.carriers, domain: domain,
                                                        outageStartMs: startMs)
                } else {
                    failoverNote = captured ? "no resolver was taken down" : "the uplink was not captured"
                }
            }
        }
        let recovery = ProbeFlow.recovery(probes, disruptionEndMs: endMs)
        let boundSeconds = Double(configuration.recoveryBound.milliseconds) / 1000
        let logName = "probes-\(name).csv"
        try? Host.writeFile(directory + "/" + logName, ProbeFlow.csv(probes))
        if !probes.contains(where: { $0.ok && $0.atMs < startMs }) { scenarioNotes.append("no probe was answered before the disruption") }
        scenarios.append(.init(
            scenario: name, engine: engine.kind.rawValue, disruptionStartMs: startMs, disruptionEndMs: endMs, recoverySeconds: recovery,
            recoveryBoundSeconds: boundSeconds,
            recoveryNote: recovery == nil ? (interrupted ? "interrupted before recovery"
                : "did not recover within \(Self.seconds(configuration.recoveryBound)) s" + (exited == nil ? "" : " (the engine exited)")) : nil,
            requestsSent: probes.count, requestsLost: probes.filter { !$0.ok }.count, reconnectAttempts: attempts, reconnectStorm: storm,
            engineRestarted: restartedBy, leaked: captured ? !leaks.isEmpty : nil,
            leakEvidence: leaks, probeLog: configuration.directory == nil ? nil : logName, probes: probes, failover: failover,
            failoverNote: failoverNote, bridge: kind == .engineRestart ? current?.bridgePhase ?? restartBridge : running.bridgePhase,
            notes: scenarioNotes))
        return current
    }

    /// The split-tunnel check with the engine up (SplitCheck): both sides captured while the
    /// split's domains are resolved, their addresses routed, and the probes sent.
    mutating func splitCheck() async {
        guard let declared = configuration.profile.split else { return }
        let origin = clock.now
        let directory = configuration.directory ?? sandbox.directory
        guard let uplink = try? await UplinkCapture.start(namespacePath: sandbox.namespacePath, interface: sandbox.uplink,
                                                          path: directory + "/uplink-split.pcap", origin: origin),
              let tun = try? await UplinkCapture.start(namespacePath: sandbox.namespacePath, interface: sandbox.tunDevice,
                                                       path: directory + "/tun-split.pcap", origin: origin) else {
            notes.append("split check not run: cannot capture on the uplink and the TUN")
            return
        }
        // The client resolves through the DNS servers the tunnel hands the system (resolv.conf).
        var ids = SplitMix64(seed: configuration.seed ^ 0x5370_6C69_7444_4E53)
        var domains: [ResilienceResult.Split.Domain] = []
        let applied = appliedSplit ?? declared
        var names = declared.domains
        for name in applied.domains where !names.contains(name) { names.append(name) }
        for name in names {
            let answer = await SplitCheck.resolve(name, servers: configuration.profile.dns, namespacePath: sandbox.namespacePath, ids: &ids)
            resolved[name] = answer.addresses
            if declared.domains.contains(name) {
                domains.append(.init(name: name, side: declared.mode == .include ? "tunnel" : "direct", server: answer.server,
                                     addresses: answer.addresses, note: answer.note))
            }
        }
        var checkNotes: [String] = []
        var ipv6IntoTunnel = true
        do {
            ipv6IntoTunnel = try await sandbox.tunnelRoutes(carriers: carriers, gateway: gateway, claimIPv6: configuration.profile.claimIPv6,
                                                            split: routedSplit, tools: tools)
        } catch {
            checkNotes.append("the split's routes could not be applied: \(error.message)")
        }
        let routed = SplitCheck.Routed(declared, resolved: resolved)
        var targets = SplitCheck.targets(routed)
        await SplitCheck.send(to: targets.tunnelled + targets.direct, namespacePath: sandbox.namespacePath)
        let unroutable = targets.tunnelled.filter { $0.contains(":") }
        if !ipv6IntoTunnel, !unroutable.isEmpty {
            // Still sent (a wrong route would show them on the uplink), but not required inside the TUN.
            targets.tunnelled.removeAll { $0.contains(":") }
            let mtu = await sandbox.tunMTU(tools: tools).map { "its MTU is \($0)" } ?? "its MTU is unknown"
            checkNotes.append("the IPv6 half was not checked: the TUN takes no IPv6 (\(mtu); IPv6 needs at least 1280, RFC 8200 5), so the tunnelled IPv6 destinations were routed to a blackhole; sent but not expected in the TUN: \(unroutable.joined(separator: ", "))")
        }
        try? await clock.sleep(for: .milliseconds(300))
        let uplinkPackets = await uplink.stop().map {
            UplinkPacket.decode($0.bytes, atMs: $0.offset.milliseconds, carriers: engine.carriers, carrierDomain: engine.carrierDomain)
        }
        let tunPackets = await tun.stop().map {
            UplinkPacket.decode(SplitCheck.ethernet($0.bytes), atMs: $0.offset.milliseconds, carriers: [], carrierDomain: nil)
        }
        split = SplitCheck.judge(declared: declared, routed: routed, domains: domains, targets: targets, uplink: uplinkPackets,
                                 tun: tunPackets, notes: checkNotes)
    }

    /// Log lines that mark a reconnect attempt, per engine.
    static func reconnectMarkers(_ kind: EngineKind) -> [String] {
        switch kind {
        case .iodine: ["Retrying version check", "Retrying login", "Sending login request"]
        case .openvpn: ["Restart pause", "ping-restart", "SIGUSR1"]
        case .wireguard: ["Sending handshake initiation"]
        case .masterdnsvpn: ["Session init attempt with", "Session restart requested", "Session reset requested",
                             // The Python edition's words (client.py _init_session, _handle_control_packet).
                             "Initializing session", "Session init failed via", "Session dropped by server"]
        // dnstt-client: a new KCP conversation (dnstt-client/main.go run).
        case .dnstt: ["begin session"]
        case .command: []
        }
    }

    static func seconds(_ duration: Duration) -> String {
        let ms = duration.milliseconds
        return ms % 1000 == 0 ? "\(ms / 1000)" : String(format: "%.1f", Double(ms) / 1000)
    }

    /// Brings the uplink back up with its routes (after an interruption in the middle of a
    /// disruption) and lifts a resolver block.
    func restoreUplink() async {
        _ = try? await sandbox.setUplink(up: true, tools: tools)
        _ = try? await sandbox.uplinkRoutes(gateway: gateway, tools: tools)
        await sandbox.unblockResolver(tools: tools)
    }

    func report() -> ResilienceResult {
        let cyclesOK = cycles.allSatisfy(\.ok) && cycles.count == configuration.cycles && (leftovers?.clean ?? true)
        let scenariosOK = scenarios.allSatisfy { $0.recoverySeconds != nil && $0.leaked != true }
            && !notes.contains { $0.hasPrefix("the engine did not come up") } && scenariosNotRun.isEmpty
        let verdict: Verdict = interrupted ? .incomplete : (cyclesOK && scenariosOK && split?.ok != false ? .pass : .fail)
        return ResilienceResult(profile: configuration.profile.name, engine: configuration.engine.rawValue, sandbox: sandbox.namespace,
                                socks: configuration.socks?.description,
                                cycles: cycles, leftovers: leftovers, scenarios: scenarios, split: split, verdict: verdict, notes: notes)
    }
}
