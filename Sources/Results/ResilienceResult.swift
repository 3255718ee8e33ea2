import Foundation
public import Base

/// What one `resilience` run found: the engine brought up and down N times in one sandbox, then
/// disrupted while a steady probe flow crosses the tunnel (docs/RESILIENCE.md). The report layer
/// writes it as `resilience.json`.
public struct ResilienceResult: Codable, Sendable, Hashable {
    public var profile: String
    public var engine: String
    public var sandbox: String
    /// The SOCKS5 proxy (`host:port` in the sandbox) of a SOCKS-shaped engine, through which the
    /// first data of each start and the probe flow went; `nil` when they went through the TUN.
    @NullCoded public var socks: String?
    public var cycles: [Cycle]
    /// What is left after the last cycle that was not there after the first one.
    @NullCoded public var leftovers: Leftovers?
    public var scenarios: [Scenario]
    /// The split-tunnel check, when the profile names a split.
    @NullCoded public var split: Split?
    public var verdict: Verdict
    public var notes: [String]

    /// One engine start and stop.
    public struct Cycle: Codable, Sendable, Hashable {
        public var index: Int
        public var ok: Bool
        /// From the engine's launch to the handshake evidence in its log or state.
        @NullCoded public var handshakeMs: Int?
        /// From the engine's launch to the first HTTP answer through the TUN (or the SOCKS5 proxy).
        @NullCoded public var firstDataMs: Int?
        /// From the stop signal to the engine's exit.
        @NullCoded public var stopMs: Int?
        @NullCoded public var failure: String?
        /// The packet-flow bridge of this start (verify's `bridge` phase; `startedMs` from the
        /// launch): the sandbox's TCP through redsocks into the engine's SOCKS5 listener, which
        /// the first data went through; `nil` when the engine has no bridge (or never got that far).
        @NullCoded public var bridge: VerifyResult.Phase?
        public init(index: Int, ok: Bool, handshakeMs: Int? = nil, firstDataMs: Int? = nil, stopMs: Int? = nil, failure: String? = nil,
                    bridge: VerifyResult.Phase? = nil) {
            self.index = index
            self.ok = ok
            self.handshakeMs = handshakeMs
            self.firstDataMs = firstDataMs
            self.stopMs = stopMs
            self.failure = failure
            self.bridge = bridge
        }
    }

    /// The difference between the sandbox after the first cycle and after the last one, and the
    /// engine processes still alive after any stop.
    public struct Leftovers: Codable, Sendable, Hashable {
        public var processes: [String]
        public var tunDevices: [String]
        public var routes: [String]
        public var sockets: [String]
        public var namespaces: [String]
        public var clean: Bool { processes.isEmpty && tunDevices.isEmpty && routes.isEmpty && sockets.isEmpty && namespaces.isEmpty }
        public init(processes: [String], tunDevices: [String], routes: [String], sockets: [String], namespaces: [String]) {
            self.processes = processes
            self.tunDevices = tunDevices
            self.routes = routes
            self.sockets = sockets
            self.namespaces = namespaces
        }
        enum CodingKeys: String, CodingKey { case processes, tunDevices, routes, sockets, namespaces, clean }
        /// `clean` is derived, and written so a reader need not derive it.
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(processes, forKey: .processes)
            try c.encode(tunDevices, forKey: .tunDevices)
            try c.encode(routes, forKey: .routes)
            try c.encode(sockets, forKey: .sockets)
            try c.encode(namespaces, forKey: .namespaces)
            try c.encode(clean, forKey: .clean)
        }
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            processes = try c.decode([String].self, forKey: .processes)
            tunDevices = try c.decode([String].self, forKey: .tunDevices)
            routes = try c.decode([String].self, forKey: .routes)
            sockets = try c.decode([String].self, forKey: .sockets)
            namespaces = try c.decode([String].self, forKey: .namespaces)
        }
    }

    /// One probe of the steady flow: sent at `atMs` (since the scenario started), its outcome.
    public struct Probe: Codable, Sendable, Hashable {
        public var atMs: Int
        public var ok: Bool
        public var latencyMs: Int?
        public var error: String?
        public init(atMs: Int, ok: Bool, latencyMs: Int?, error: String?) {
            self.atMs = atMs
            self.ok = ok
            self.latencyMs = latencyMs
            self.error = error
        }
    }

    public struct Scenario: Codable, Sendable, Hashable {
        /// e.g. "uplink-down-5s", "address-change", "resolver-outage-2s", "engine-restart".
        public var scenario: String
        public var engine: String
        /// The disruption, in ms since the scenario started.
        public var disruptionStartMs: Int
        public var disruptionEndMs: Int
        /// From the end of the disruption to the answer of the first successful probe sent after
        /// it; `nil` when none came within `recoveryBoundSeconds`.
        @NullCoded public var recoverySeconds: Double?
        public var recoveryBoundSeconds: Double
        /// Why there is no recovery time, e.g. "did not recover within 30 s".
        @NullCoded public var recoveryNote: String?
        public var requestsSent: Int
        /// Probes of the scenario that got no answer.
        public var requestsLost: Int
        /// Lines of the engine's log during the scenario that are a reconnect attempt.
        public var reconnectAttempts: Int
        /// More than `stormThresholdPerMinute` attempts per minute of the scenario.
        public var reconnectStorm: Bool
        /// The engine's pid changed: "tool" when the tool restarted it, "self" otherwise; `nil` when it did not.
        @NullCoded public var engineRestarted: String?
        /// Packets that left the uplink outside the carrier during the scenario; `nil` when not captured.
        @NullCoded public var leaked: Bool?
        public var leakEvidence: [UplinkPacket]
        /// The probe log file (CSV) in the report directory.
        @NullCoded public var probeLog: String?
        public var probes: [Probe]
        /// Resolver outages only: whether the engine's tunnel queries moved to another profile
        /// resolver after the outage began; `nil` (with `failoverNote`) when that cannot happen or
        /// was not measured.
        @NullCoded public var failover: Failover?
        @NullCoded public var failoverNote: String?
        /// The packet-flow bridge the probe flow went through (`startedMs` from that engine's
        /// launch): the one of the engine start the scenario began with, or, when the scenario
        /// restarted the engine, the restarted engine's; `nil` when the engine has no bridge.
        @NullCoded public var bridge: VerifyResult.Phase?
        public var notes: [String]
        public init(scenario: String, engine: String, disruptionStartMs: Int, disruptionEndMs: Int, recoverySeconds: Double?,
                    recoveryBoundSeconds: Double, recoveryNote: String?, requestsSent: Int, requestsLost: Int,
                    reconnectAttempts: Int, reconnectStorm: Bool, engineRestarted: String?, leaked: Bool?,
                    leakEvidence: [UplinkPacket], probeLog: String?, probes: [Probe], failover: Failover? = nil,
                    failoverNote: String? = nil, bridge: VerifyResult.Phase? = nil, notes: [String]) {
            self.scenario = scenario
            self.engine = engine
            self.disruptionStartMs = disruptionStartMs
            self.disruptionEndMs = disruptionEndMs
            self.recoverySeconds = recoverySeconds
            self.recoveryBoundSeconds = recoveryBoundSeconds
            self.recoveryNote = recoveryNote
            self.requestsSent = requestsSent
            self.requestsLost = requestsLost
            self.reconnectAttempts = reconnectAttempts
            self.reconnectStorm = reconnectStorm
            self.engineRestarted = engineRestarted
            self.leaked = leaked
            self.leakEvidence = leakEvidence
            self.probeLog = probeLog
            self.probes = probes
            self.failover = failover
            self.failoverNote = failoverNote
            self.bridge = bridge
            self.notes = notes
        }
    }

    /// From the uplink capture of a resolver outage: where the tunnel's queries went once the
    /// resolver in use stopped answering.
    public struct Failover: Codable, Sendable, Hashable {
        /// The resolver taken down (the one the engine was using).
        public var blockedResolver: String
        /// Tunnel queries went to another profile resolver after the outage began.
        public var failedOver: Bool
        /// The first other profile resolver that got a tunnel query after the outage began.
        @NullCoded public var resolver: String?
        /// From the start of the outage to that first query; `nil` when there was none.
        @NullCoded public var afterMs: Int?
        /// Tunnel queries (carrier packets) per resolver from the start of the outage on, e.g. "198.18.0.1:53".
        public var queriesAfterStart: [String: Int]
        public init(blockedResolver: String, failedOver: Bool, resolver: String?, afterMs: Int?, queriesAfterStart: [String: Int]) {
            self.blockedResolver = blockedResolver
            self.failedOver = failedOver
            self.resolver = resolver
            self.afterMs = afterMs
            self.queriesAfterStart = queriesAfterStart
        }
    }

    /// The split-tunnel check: traffic to `tunnelled` destinations must never appear in clear on
    /// the uplink, traffic to `direct` destinations must never enter the TUN, and a lookup of a
    /// tunnelled domain must not cross the uplink in clear.
    public struct Split: Codable, Sendable, Hashable {
        public var mode: String
        /// The IPv4 and IPv6 prefixes of the split.
        public var prefixes: [String]
        /// The domain names of the split, each with the addresses it resolved to.
        public var domains: [Domain]
        public var tunnelledProbes: [String]
        public var directProbes: [String]
        /// Packets to tunnelled destinations seen in clear on the uplink, and DNS queries for a
        /// tunnelled domain seen there (a name leak; `query` holds the QNAME, `domain` the entry).
        public var clearOnUplink: [UplinkPacket]
        /// Packets to direct destinations seen inside the TUN.
        public var insideTunnel: [UplinkPacket]
        /// Probe destinations not seen on the side they were routed to (neither leak nor proof).
        public var unseenProbes: [String]
        /// What could not be checked and why.
        public var notes: [String]
        public var ok: Bool

        /// One domain entry: resolved (A and AAAA) through the sandbox's DNS server as the
        /// client would, while both sides were captured.
        public struct Domain: Codable, Sendable, Hashable {
            public var name: String
            /// "tunnel" or "direct": the side the profile puts it on.
            public var side: String
            /// The server that answered, `nil` when none did.
            @NullCoded public var server: String?
            public var addresses: [String]
            /// Why there are no addresses (no answer, NXDOMAIN, no DNS server), `nil` when resolved.
            @NullCoded public var note: String?
            public init(name: String, side: String, server: String?, addresses: [String], note: String?) {
                self.name = name
                self.side = side
                self.server = server
                self.addresses = addresses
                self.note = note
            }
        }

        public init(mode: String, prefixes: [String], domains: [Domain] = [], tunnelledProbes: [String], directProbes: [String],
                    clearOnUplink: [UplinkPacket], insideTunnel: [UplinkPacket], unseenProbes: [String] = [], notes: [String] = [], ok: Bool) {
            self.mode = mode
            self.prefixes = prefixes
            self.domains = domains
            self.tunnelledProbes = tunnelledProbes
            self.directProbes = directProbes
            self.clearOnUplink = clearOnUplink
            self.insideTunnel = insideTunnel
            self.unseenProbes = unseenProbes
            self.notes = notes
            self.ok = ok
        }
    }

    public init(profile: String, engine: String, sandbox: String, socks: String? = nil, cycles: [Cycle], leftovers: Leftovers?,
                scenarios: [Scenario], split: Split? = nil, verdict: Verdict, notes: [String]) {
        self.profile = profile
        self.engine = engine
        self.sandbox = sandbox
        self.socks = socks
        self.cycles = cycles
        self.leftovers = leftovers
        self.scenarios = scenarios
        self.split = split
        self.verdict = verdict
        self.notes = notes
    }
}

