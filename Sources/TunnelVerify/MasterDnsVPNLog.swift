import Base
import Foundation
public import Results

/// What the MasterDnsVPN client's own log says about its session, read line by line, in the words
/// of either edition: the Go edition (internal/client: mtu.go, mtu_logging.go, client.go,
/// async_runtime.go; the recordings in Tests/TunnelVerifyTests/Fixtures/masterdnsvpn) or the Python
/// edition (client.py at 012b7d3: test_mtu_sizes, _init_session, run_client, _main_tunnel_loop;
/// the recordings in Fixtures/masterdnsvpn-python), whose lines are coloured with ANSI escapes and
/// say the same things in other words. Total: any text yields a value.
///
/// The handshake rule is the seed's: a session id AND at least one accepted resolver. Neither client
/// reports a packet counter, an ARQ resend or NACK counter, nor FEC (neither has FEC), and neither
/// has a status output: those diagnostics are null with the reason in `unavailable`.
public struct MasterDnsVPNLog: Sendable, Hashable {
    public var edition: MasterDnsVPNEdition
    /// `mtu-test`, `session-init`, `session`, `running` (the last stage the log reached).
    public var phase: String?
    /// Resolvers the MTU test accepted, `ip:port`, in log order (each once).
    public var accepted: [String] = []
    /// Resolvers the MTU test rejected, with the client's reason word (`UPLOAD_MTU`, ...).
    public var rejected: [(resolver: String, reason: String)] = []
    /// "Total valid resolvers after MTU testing: V of N".
    public var validTotal: (valid: Int, of: Int)?
    public var uploadMTU: Int?
    public var downloadMTU: Int?
    /// The resolver of the last session init attempt (Go: each attempt; Python: a failed one).
    public var sessionResolver: String?
    public var sessionID: String?
    /// The first line of each failure kind the client printed, in its own words.
    public var noResolverLine: String?
    public var sessionFailureLine: String?
    public var rejectionLine: String?
    public var sessionResetLine: String?
    public var startupErrorLine: String?
    public var socksListening: String?
    /// The line that carried the session id / the first acceptance (handshake evidence).
    public var sessionLine: String?
    public var acceptedLine: String?

    public static func == (a: MasterDnsVPNLog, b: MasterDnsVPNLog) -> Bool { a.edition == b.edition && a.lines == b.lines }
    public func hash(into hasher: inout Hasher) { hasher.combine(edition); hasher.combine(lines) }
    private var lines: [String] = []

    public init(_ text: String, edition: MasterDnsVPNEdition = .go) {
        self.edition = edition
        for raw in TerminalText.plain(text).split(whereSeparator: \.isNewline) {
            let line = Self.message(String(raw))
            lines.append(line)
            readCommon(line)
            switch edition {
            case .go: readGo(line)
            case .python: readPython(line)
            }
        }
    }

    /// The message of a log line: the text after the `[LEVEL]` tag of the Go edition's
    /// `2026/11/25 14:51:44 [MasterDnsVPN Client] [INFO] ...` and of the Python edition's
    /// `[MasterDnsVPN Client] [14:51:44] [SUCCESS] ...`, trimmed; the line itself otherwise.
    static func message(_ line: String) -> String {
        for tag in ["[INFO] ", "[DEBUG] ", "[WARN] ", "[WARNING] ", "[ERROR] ", "[FATAL] ", "[SUCCESS] ", "[CRITICAL] "] {
            if let range = line.range(of: tag) { return String(line[range.upperBound...]).trimmingCharacters(in: .whitespaces) }
        }
        return line.trimmingCharacters(in: .whitespaces)
    }

    /// The MTU test's lines, the same words in both editions.
    private mutating func readCommon(_ line: String) {
        if line.hasPrefix("Testing MTU sizes for all resolver-domain pairs") {
            phase = "mtu-test"
        } else if let body = Self.after(line, "Accepted (") {
            // "✅ Accepted (1/1): vpn.lab.test via 198.18.10.2:53 | upload=139 | download=390 | totals: ..."
            if let resolver = Self.word(after: " via ", in: body) {
                if !accepted.contains(resolver) { accepted.append(resolver) }
                if acceptedLine == nil { acceptedLine = line }
            }
        } else if let body = Self.after(line, "Rejected (") {
            if let resolver = Self.word(after: " via ", in: body) {
                rejected.append((resolver, Self.word(after: "reason=", in: body) ?? "?"))
            }
        } else if let body = Self.after(line, "Total valid resolvers after MTU testing: ") {
            let words = body.split(separator: " ")
            if words.count >= 3, let valid = Int(words[0]), let total = Int(words[2]) { validTotal = (valid, total) }
        } else if let body = Self.after(line, "Selected Synced Upload MTU: ") {
            uploadMTU = Int(body.prefix { $0.isNumber })
            downloadMTU = Self.word(after: "Selected Synced Download MTU: ", in: body).flatMap { Int($0) }
        } else if line.contains("No valid connections found after MTU testing") || line.contains("MTU tests failed") {
            if noResolverLine == nil { noResolverLine = line }
        } else if line.contains("Domains or Resolvers are missing") {
            if startupErrorLine == nil { startupErrorLine = line }
        }
    }

    private mutating func readGo(_ line: String) {
        if let body = Self.after(line, "Session init attempt with ") {
            phase = "session-init"
            sessionResolver = Self.word(after: " and resolver ", in: body)
        } else if let body = Self.after(line, "Session Initialized Successfully (ID: ") {
            sessionID = String(body.prefix { $0 != ")" })
            sessionLine = line
            phase = "session"
        } else if line.contains("Session initialization failed") {
            if sessionFailureLine == nil { sessionFailureLine = line }
            if line.contains("busy") || line.contains("rejected"), rejectionLine == nil { rejectionLine = line }
        } else if line.contains("Session restart requested") || line.contains("Session reset requested") {
            if sessionResetLine == nil { sessionResetLine = line }
        } else if line.contains("SOCKS5 Proxy server is listening on") {
            phase = "running"
            if socksListening == nil { socksListening = Self.word(after: "listening on ", in: line) }
        } else if line.contains("startup failed") || line.contains("Failed to start") || line.contains("client codec setup failed") {
            if startupErrorLine == nil { startupErrorLine = line }
        }
    }

    /// The Python edition's words (client.py): "Initializing session ...", "Validated Session ID: 7,
    /// ..." then "Session Established! Session ID: 7", "Session init failed via IP for DOMAIN.
    /// Retrying overall process...", "SOCKS5 Proxy started on PORT ...", and its ways of exiting at
    /// start (a config it cannot parse is said with `print`, without a level tag).
    private mutating func readPython(_ line: String) {
        if line.hasPrefix("Initializing session") {
            phase = "session-init"
        } else if let body = Self.after(line, "Validated Session ID: ") ?? Self.after(line, "Session Established! Session ID: ") {
            let id = body.prefix { $0.isNumber }
            if sessionID == nil, !id.isEmpty {
                sessionID = String(id)
                sessionLine = line
            }
            phase = "session"
        } else if let body = Self.after(line, "Session init failed via ") {
            if sessionFailureLine == nil { sessionFailureLine = line }
            sessionResolver = body.split(separator: " ").first.map(String.init)
        } else if line.contains("Failed to initialize session with the server") {
            if sessionFailureLine == nil { sessionFailureLine = line }
        } else if line.contains("Session dropped by server") {
            if sessionResetLine == nil { sessionResetLine = line }
        } else if let body = Self.after(line, "SOCKS5 Proxy started on ") {
            phase = "running"
            if socksListening == nil { socksListening = body.split(separator: " ").first.map(String.init) }
        } else if Self.pythonStartupFailures.contains(where: { line.contains($0) }) {
            if startupErrorLine == nil { startupErrorLine = line }
        }
    }

    /// The Python client's lines before it exits at start (client.py __init__, start,
    /// _load_resolvers_from_file; dns_utils/config_loader.py load_config) and a missing module's
    /// traceback line.
    static let pythonStartupFailures = [
        "Failed to parse config file", "Config file 'client_config.toml' not found", "Invalid PROTOCOL_TYPE",
        "No encryption key provided", "Resolver file 'client_resolvers.txt' not found", "Failed to read resolver file",
        "No valid resolver IP/subnet found", "ModuleNotFoundError: ", "ImportError: ",
    ]

    private static func after(_ line: String, _ marker: String) -> Substring? {
        line.range(of: marker).map { line[$0.upperBound...] }
    }

    private static func word(after marker: String, in text: some StringProtocol) -> String? {
        guard let range = text.range(of: marker) else { return nil }
        let word = text[range.upperBound...].prefix { !$0.isWhitespace && $0 != "|" && $0 != "," }
        return word.isEmpty ? nil : String(word)
    }

    /// The seed's handshake rule on this log: done when the client has a session id and has accepted
    /// at least one resolver; pending otherwise. The client retries its MTU test and its session
    /// init by itself, so nothing it logs ends the wait before the deadline: what was missing then
    /// is `missing`. (A client that exits ends the run at its engine phase.)
    public var handshake: HandshakeVerdict {
        if let sessionID, let first = accepted.first {
            return .done(evidence: "session id \(sessionID), \(accepted.count) accepted resolver\(accepted.count == 1 ? "" : "s") (\(first))",
                         line: sessionLine ?? "")
        }
        return .pending
    }

    /// What was missing when the deadline passed (or the client exited), named in the seed's terms and
    /// carried by the client's own line.
    public var missing: (reason: String, line: String?) {
        if let startupErrorLine { return ("the client did not start", startupErrorLine) }
        if accepted.isEmpty {
            if let noResolverLine {
                var seen = Set<String>()
                let distinct = rejected.map { "\($0.resolver) \($0.reason)" }.filter { seen.insert($0).inserted }
                let detail = distinct.isEmpty ? "" : " (rejected: " + distinct.joined(separator: ", ") + ")"
                // The client's log reads the same for a wrong key and a resolver that drops the
                // tunnel (recordings wrong-key and resolver-drop): every MTU probe fails at once.
                return ("no resolver accepted: every MTU probe failed\(detail); a wrong encryption key or method, or a resolver that does not carry the tunnel's queries", noResolverLine)
            }
            return ("no resolver accepted: the MTU test did not finish (no answer through the resolvers)", nil)
        }
        if let rejectionLine { return ("no session: the server rejected the session", rejectionLine) }
        if let sessionFailureLine {
            switch edition {
            case .go:
                return ("no session: a resolver was accepted but session init failed (a wrong encryption key or method gives this)", sessionFailureLine)
            case .python:
                // The Python server answers nothing when its MAX_SESSIONS slots are all taken
                // (server.py new_session); the client only sees its attempts time out.
                return ("no session: a resolver was accepted but the server did not answer session init (the Python server drops it when all its MAX_SESSIONS slots are taken)", sessionFailureLine)
            }
        }
        return ("no session: a resolver was accepted but no session id arrived", nil)
    }

    public enum HandshakeVerdict: Sendable, Hashable {
        case pending
        case done(evidence: String, line: String)
    }
}

extension EngineDiagnostics {
    /// The diagnostics of a MasterDnsVPN client's log; `carrier` is the (up, down) packet count of
    /// the uplink capture when there was one.
    public static func masterDnsVPN(log text: String, edition: MasterDnsVPNEdition = .go, carrier: (up: Int, down: Int)?,
                                    fec: FECPreset?) -> EngineDiagnostics {
        let log = MasterDnsVPNLog(text, edition: edition)
        var d = EngineDiagnostics()
        let source = "the client's log (\(edition.displayName))"
        func set<T>(_ path: WritableKeyPath<EngineDiagnostics, T?>, _ name: String, _ value: T?, missing: String) {
            d[keyPath: path] = value
            if value == nil { d.unavailable[name] = missing } else { d.sources[name] = source }
        }
        set(\.enginePhase, "enginePhase", log.phase, missing: "the client logged no stage")
        set(\.selectedResolver, "selectedResolver", log.sessionResolver ?? log.accepted.first, missing: "the client logged no resolver it selected")
        set(\.sessionID, "sessionID", log.sessionID, missing: "the client logged no session id")
        let acceptedCount: Int? = log.validTotal?.valid ?? (log.phase == nil ? nil : log.accepted.count)
        set(\.acceptedResolvers, "acceptedResolvers", acceptedCount, missing: "the client's MTU test did not report")
        set(\.rejectedResolvers, "rejectedResolvers", log.validTotal.map { $0.of - $0.valid } ?? (log.rejected.isEmpty ? nil : Set(log.rejected.map(\.resolver)).count),
            missing: "the client's MTU test did not report")
        set(\.uploadMTU, "uploadMTU", log.uploadMTU, missing: "the client logged no synced upload MTU")
        set(\.downloadMTU, "downloadMTU", log.downloadMTU, missing: "the client logged no synced download MTU")
        if let carrier {
            d.packetsUp = carrier.up
            d.packetsDown = carrier.down
            d.sources["packetsUp"] = "uplink capture: carrier packets to the resolvers"
            d.sources["packetsDown"] = "uplink capture: carrier packets from the resolvers"
        } else {
            let why = "the client has no packet counter and there was no uplink capture"
            d.unavailable["packetsUp"] = why
            d.unavailable["packetsDown"] = why
        }
        let noCounter = "the MasterDnsVPN \(edition.displayName)'s client logs no ARQ counter at any LOG_LEVEL and has no status output"
        d.unavailable["arqResends"] = noCounter
        d.unavailable["arqNacks"] = noCounter
        let noFEC = "the upstream MasterDnsVPN \(edition.displayName)'s client has no FEC (no FEC setting, no FEC in its protocol)"
        d.unavailable["fecNegotiated"] = noFEC
        d.unavailable["fecRecoveredPackets"] = noFEC
        d.fecRequested = fec
        return d
    }
}
