
public import Base

/// What one `verify` run found: phases, handshake, checks and the verdict (the report layer writes it
/// as `verify.json`). A check that did not run has `leaked: null` (or `ok: null`) and says why in
/// `note`: nothing here is a number that nothing measured.
public struct VerifyResult: Codable, Sendable {
    public struct Phase: Codable, Sendable, Hashable {
        public var name: String
        /// Milliseconds after the run started.
        public var startedMs: Int
        public var durationMs: Int
        public var ok: Bool
        public var detail: String?

        public init(name: String, startedMs: Int, durationMs: Int, ok: Bool, detail: String? = nil) {
            self.name = name
            self.startedMs = startedMs
            self.durationMs = durationMs
            self.ok = ok
            self.detail = detail
        }
    }

    public struct Failure: Codable, Sendable, Hashable {
        public var phase: String
        public var reason: String
        /// The engine's own last words (log lines), when it said something.
        public var engineWords: [String]
        public var exitCode: Int32?

        public init(phase: String, reason: String, engineWords: [String], exitCode: Int32? = nil) {
            self.phase = phase
            self.reason = reason
            self.engineWords = engineWords
            self.exitCode = exitCode
        }
    }

    public struct Handshake: Codable, Sendable, Hashable {
        public var ok: Bool
        @NullCoded public var evidence: String?
        /// Milliseconds from the engine's start to the evidence.
        @NullCoded public var timeMs: Int?

        public init(ok: Bool, evidence: String? = nil, timeMs: Int? = nil) {
            self.ok = ok
            self.evidence = evidence
            self.timeMs = timeMs
        }
    }

    public struct ExitIP: Codable, Sendable, Hashable {
        @NullCoded public var url: String?
        @NullCoded public var observed: String?
        @NullCoded public var expected: String?
        /// `null` when not measured or when no address is expected.
        @NullCoded public var ok: Bool?
        public var note: String?

        public init(url: String? = nil, observed: String? = nil, expected: String? = nil, ok: Bool? = nil, note: String? = nil) {
            self.url = url
            self.observed = observed
            self.expected = expected
            self.ok = ok
            self.note = note
        }
    }

    public struct Leak: Codable, Sendable, Hashable {
        public var requested: Bool
        /// `null` when the check did not run (see `note`).
        @NullCoded public var leaked: Bool?
        /// The packets that went around the tunnel, itemized.
        public var evidence: [UplinkPacket]
        public var note: String?

        public init(requested: Bool, leaked: Bool? = nil, evidence: [UplinkPacket], note: String? = nil) {
            self.requested = requested
            self.leaked = leaked
            self.evidence = evidence
            self.note = note
        }
    }

    public struct DNSLeak: Codable, Sendable, Hashable {
        public var requested: Bool
        @NullCoded public var leaked: Bool?
        public var servers: [String]
        public var names: [String]
        /// Names that got an answer (any rcode) from at least one of `servers`, through the tunnel.
        public var answered: Int
        /// DNS works through the tunnel: every name was answered. False fails the run (a tunnel
        /// whose DNS is broken is not a working tunnel); nil when there were no servers to ask.
        @NullCoded public var resolves: Bool?
        /// Uplink packets that are DNS queries outside the carrier.
        public var evidence: [UplinkPacket]
        /// Resolvers the responder's leak zone saw asking for the unique names (when available).
        @NullCoded public var resolversSeen: [String]?
        /// Resolvers seen that are not among `--expected-resolver`.
        public var unexpectedResolvers: [String]?
        public var note: String?

        public init(requested: Bool, leaked: Bool? = nil, servers: [String], names: [String], answered: Int, evidence: [UplinkPacket], resolversSeen: [String]? = nil, unexpectedResolvers: [String]? = nil, note: String? = nil) {
            self.requested = requested
            self.leaked = leaked
            self.servers = servers
            self.names = names
            self.answered = answered
            self.evidence = evidence
            self.resolversSeen = resolversSeen
            self.unexpectedResolvers = unexpectedResolvers
            self.note = note
        }
    }

    public struct Capture: Codable, Sendable, Hashable {
        public var interface: String
        /// The pcap file of every frame that left the sandbox, when kept.
        public var file: String?
        public var packets: Int
        public var carrier: Int
        public var linkControl: Int
        /// Every packet that is neither the carrier nor link upkeep.
        public var nonCarrier: [UplinkPacket]

        public init(interface: String, file: String? = nil, packets: Int, carrier: Int, linkControl: Int, nonCarrier: [UplinkPacket]) {
            self.interface = interface
            self.file = file
            self.packets = packets
            self.carrier = carrier
            self.linkControl = linkControl
            self.nonCarrier = nonCarrier
        }
    }

    public struct Diagnostics: Codable, Sendable, Hashable {
        public var phase: String
        public var selectedResolver: String?
        public var session: String?
        public var tunAddress: String?
        /// Packets the TUN carried towards the engine / back from it (/proc/net/dev).
        public var tunPacketsUp: UInt64?
        public var tunPacketsDown: UInt64?
        public var routeLoops: [String]
        public var errors: [String]
        /// The seed's diagnostics list, for engines whose log tells it (MasterDnsVPN); absent otherwise.
        public var engine: EngineDiagnostics?

        public init(phase: String, selectedResolver: String? = nil, session: String? = nil, tunAddress: String? = nil, tunPacketsUp: UInt64? = nil, tunPacketsDown: UInt64? = nil, routeLoops: [String], errors: [String]) {
            self.phase = phase
            self.selectedResolver = selectedResolver
            self.session = session
            self.tunAddress = tunAddress
            self.tunPacketsUp = tunPacketsUp
            self.tunPacketsDown = tunPacketsDown
            self.routeLoops = routeLoops
            self.errors = errors
        }
    }

    public struct Timing: Codable, Sendable, Hashable {
        public var startToVerdictMs: Int
        public var handshakeMs: Int?
        /// From the handshake evidence to the verdict: the data phase and every check.
        public var afterHandshakeMs: Int?

        public init(startToVerdictMs: Int, handshakeMs: Int? = nil, afterHandshakeMs: Int? = nil) {
            self.startToVerdictMs = startToVerdictMs
            self.handshakeMs = handshakeMs
            self.afterHandshakeMs = afterHandshakeMs
        }
    }

    public var profile: String
    public var engine: String
    public var engineCommand: [String]
    public var sandbox: String
    public var phases: [Phase]
    public var failure: Failure?
    public var handshake: Handshake
    public var exitIP: ExitIP
    public var dnsLeak: DNSLeak
    public var ipv6Leak: Leak
    public var tunnelFailure: Leak
    public var capture: Capture?
    public var diagnostics: Diagnostics
    public var timing: Timing
    /// `pass` only when every requested check passed; `fail` otherwise; `incomplete` when interrupted.
    public var verdict: Verdict
    /// Why the verdict is not `pass`: the failed phase, or every failed check, in one line (also the
    /// first line of verify.md and of the page); nil on a pass.
    @NullCoded public var reason: String?
    /// The first data's time and a bulk download's goodput, when the run measured them (`scan
    /// --e2e`, Transfer.swift); absent otherwise.
    public var transfer: Transfer?

    public init(profile: String, engine: String, engineCommand: [String], sandbox: String, phases: [Phase],
                failure: Failure? = nil, handshake: Handshake, exitIP: ExitIP, dnsLeak: DNSLeak, ipv6Leak: Leak,
                tunnelFailure: Leak, capture: Capture? = nil, diagnostics: Diagnostics, timing: Timing, verdict: Verdict,
                reason: String? = nil, transfer: Transfer? = nil) {
        self.transfer = transfer
        self.profile = profile
        self.engine = engine
        self.engineCommand = engineCommand
        self.sandbox = sandbox
        self.phases = phases
        self.failure = failure
        self.handshake = handshake
        self.exitIP = exitIP
        self.dnsLeak = dnsLeak
        self.ipv6Leak = ipv6Leak
        self.tunnelFailure = tunnelFailure
        self.capture = capture
        self.diagnostics = diagnostics
        self.timing = timing
        self.verdict = verdict
        self.reason = reason
    }
}

/// How a `verify` or `resilience` run ended.
public enum Verdict: String, Codable, Sendable, Hashable {
    /// Every requested check passed.
    case pass
    case fail
    /// Interrupted before the checks ended: what was measured is kept, no verdict is drawn.
    case incomplete
}

extension VerifyResult {
    /// What crossed the tunnel once the handshake was done: how long the first data took and what
    /// a short bulk download achieved (present only when the run was asked for it, `scan --e2e`).
    public struct Transfer: Codable, Sendable, Hashable {
        /// Milliseconds from the handshake evidence to the first answer through the tunnel (the
        /// data phase's GET, retries included).
        @NullCoded public var firstDataMs: Int?
        /// The bulk download's URL and the body bytes asked for.
        public var bulkURL: String?
        public var bulkRequested: Int?
        /// Body bytes received (the application's bytes: retransmissions and headers excluded).
        @NullCoded public var bulkBytes: Int?
        /// Milliseconds from sending the request to its first response byte.
        @NullCoded public var timeToFirstByteMs: Double?
        /// Milliseconds from sending the request to the last body byte read.
        @NullCoded public var bulkMs: Double?
        /// Goodput: body bytes over `bulkMs`, in bytes per second. RFC 2647 3.17 defines goodput as
        /// the bits forwarded to the right destination per unit of time, minus any lost or
        /// retransmitted; counting what the application received does exactly that.
        @NullCoded public var goodputBytesPerSecond: Double?
        /// Why the bulk download failed, when it did.
        public var error: String?

        public init(firstDataMs: Int? = nil) {
            self.firstDataMs = firstDataMs
        }
    }
}
