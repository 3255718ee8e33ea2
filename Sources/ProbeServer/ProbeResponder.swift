public import DNSWire
public import ProbeProtocol

/// The responder's decisions, free of sockets: one query in, at most one response out.
///
/// Rules (docs/PROTOCOL.md, "Responder"):
/// - names outside the zone get REFUSED; unparsable queries get FORMERR when the header can be read,
///   nothing otherwise; responses never reach the responder's logic;
/// - the apex answers SOA and NS so resolvers treat this as the zone's server;
/// - names under the zone that are not authenticated probes get NOERROR with no records and no SOA
///   (QNAME-minimising resolvers ask for such names on the way to every probe, and a REFUSED there
///   turns the probe into SERVFAIL); such answers are never larger than the query;
/// - over UDP, a response larger than the query's EDNS size (512 without EDNS) goes out as TC with no
///   answers (RFC 6891 7, RFC 1035 4.2.1); in `EDNSMode.ignore` answers to authenticated probes are
///   sent whole whatever size the asker advertised, as MasterDnsVPN's server does;
/// - no amplification: over UDP an answer to a query that is not an authenticated probe is never
///   larger than the query (a larger one goes out as TC, and the asker retries over TCP, whose
///   handshake proves its address, RFC 7766 1); this rule lives in `finish` below and nowhere else;
/// - over TCP (RFC 7766) answers are sent whole, up to 65535 bytes;
/// - echo and upload replies carry what the responder saw of the query: the EDNS size the asker
///   advertised, whether it came over TCP, and whether the responder honours that size (the
///   client uses this to name the upstream EDNS size as a limit, docs/PROTOCOL.md);
/// - path probes are answered with the stream's receive history (`ProbeResponder+Path.swift`).
public struct ProbeResponder: Sendable {
    /// How a response over UDP treats the EDNS UDP size the asker (the resolver) advertised.
    public enum EDNSMode: String, Sendable, CaseIterable {
        /// As authoritative servers do: a larger answer goes out as TC with no records (RFC 6891 7).
        case honor
        /// As MasterDnsVPN's server does: answers to authenticated probes are sent whole, up to the
        /// payload the probe asks for, whatever the advertised size (unauthenticated ones still honour it).
        case ignore
    }

    /// The transport a query arrived on.
    public enum Transport: String, Sendable {
        case udp, tcp
    }

    public struct Configuration: Sendable {
        public var zone: DNSName
        public var key: ProbeKey
        /// Name servers published at the apex with their IPv4 glue (4 bytes each).
        public var nameServers: [(name: DNSName, ipv4: [UInt8]?)]
        public var ttl: UInt32
        public var serial: UInt32
        /// Records the askers of leak-zone probes (kind 5); `nil` refuses them.
        public var leakZone: LeakZone?
        public var ednsMode: EDNSMode

        public init(zone: DNSName, key: ProbeKey, nameServers: [(name: DNSName, ipv4: [UInt8]?)] = [],
                    ttl: UInt32 = 0, serial: UInt32 = 1, leakZone: LeakZone? = nil, ednsMode: EDNSMode = .honor) {
            self.leakZone = leakZone
            self.ednsMode = ednsMode
            self.zone = zone
            self.key = key
            self.nameServers = nameServers
            self.ttl = ttl
            self.serial = serial
        }
    }

    /// What happened to a query: what the counters and the log record.
    public enum Disposition: String, Sendable, CaseIterable {
        case echo, upload, download, downloadTruncated, path, pathDrain, leak, apex, nameServer, noData, refused, formErr, notImp, dropped
    }

    public struct Outcome: Sendable {
        public var response: [UInt8]?
        public var disposition: Disposition
        /// The whole answer before `finish` applies the transport's size rules.
        var message: DNSMessage?
        /// The query's EDNS UDP size, 512 without EDNS (RFC 1035 4.2.1, RFC 6891 6.2.5).
        var askerLimit = 512
        /// The EDNS mode a download probe asked for, instead of the configured one.
        var ednsMode: EDNSMode?

        init(response: [UInt8]?, disposition: Disposition, message: DNSMessage? = nil, askerLimit: Int = 512) {
            self.response = response
            self.disposition = disposition
            self.message = message
            self.askerLimit = askerLimit
        }
    }

    /// Dispositions that answer an authenticated probe; every other answer is bound by the
    /// no-amplification rule over UDP.
    static let authenticated: Set<Disposition> = [.echo, .upload, .download, .downloadTruncated, .path, .pathDrain, .leak]

    /// Our own EDNS buffer size, advertised in every response to an EDNS query.
    static let ednsSize: UInt16 = 4096

    public let configuration: Configuration
    /// Receive histories of path streams (kind 4), shared by every query this responder answers.
    public let pathStreams: PathStreamTable
    private let soa: DNSRData
    /// The transport of the query being answered (set per call by `respond`).
    private var transport: Transport = .udp

    public init(configuration: Configuration, pathStreams: PathStreamTable = PathStreamTable()) {
        self.configuration = configuration
        self.pathStreams = pathStreams
        let zone = configuration.zone
        let mname = configuration.nameServers.first?.name ?? zone
        let rname = (try? DNSName(labels: [Array("hostmaster".utf8)] + zone.labels)) ?? zone
        soa = .soa(mname: mname, rname: rname, serial: configuration.serial, refresh: 3600, retry: 600,
                   expire: 86400, minimum: 0)
    }

    public func respond(to bytes: [UInt8]) -> Outcome { respond(to: bytes, source: []) }

    /// As `respond(to:)`, with the asker's address (4 or 16 bytes) for leak-zone records.
    public func respond(to bytes: [UInt8], source: [UInt8]) -> Outcome {
        respond(to: bytes, source: source, transport: .udp)
    }

    /// As `respond(to:source:)` for a query that arrived on `transport` (its size rules differ).
    public func respond(to bytes: [UInt8], source: [UInt8], transport: Transport) -> Outcome {
        var call = self
        call.transport = transport
        let outcome = call.answer(bytes, source: source)
        return call.finish(outcome, queryBytes: bytes.count)
    }

    private func answer(_ bytes: [UInt8], source: [UInt8]) -> Outcome {
        let query: DNSMessage
        do {
            query = try DNSMessage(parsing: bytes)
        } catch {
            return formErr(bytes)
        }
        guard !query.header.isResponse else { return Outcome(response: nil, disposition: .dropped) }
        guard query.header.opcode == .query else { return reply(query, rcode: .notImp, .notImp) }
        guard query.questions.count == 1, let question = query.questions.first else {
            return reply(query, rcode: .formErr, .formErr)
        }
        let zone = configuration.zone
        guard question.name.isSubdomain(of: zone) else { return reply(query, rcode: .refused, .refused) }

        if question.name.equalsIgnoringCase(zone) { return apex(query, question) }
        if let ns = configuration.nameServers.first(where: { $0.name.equalsIgnoringCase(question.name) }) {
            guard question.type == .a, let v4 = ns.ipv4 else { return reply(query, rcode: .noError, .nameServer) }
            return reply(query, answers: [DNSResourceRecord(name: question.name, ttl: 300, rdata: .a(v4))], .nameServer)
        }

        let received: ProbeName.Received
        do {
            received = try ProbeName.read(question.name, zone: zone, key: configuration.key)
        } catch {
            return reply(query, rcode: .noError, .noData)
        }
        switch received.meta.kind {
        case .echo, .upload:
            return answerReply(query, question, received)
        case .download:
            guard received.integrity == .intact || received.integrity == .caseChanged else {
                return answerReply(query, question, received)
            }
            return download(query, question, received.meta)
        case .path:
            return path(query, question, received.meta)
        case .leak:
            return leak(query, question, received, source: source)
        }
    }

    func answerReply(_ query: DNSMessage, _ question: DNSQuestion, _ received: ProbeName.Received) -> Outcome {
        var probeReply = ProbeReply(answering: received)
        probeReply.observed = ProbeReply.Observed(advertisedSize: query.edns?.udpPayloadSize ?? 0,
                                                  overTCP: transport == .tcp,
                                                  honorsEDNS: configuration.ednsMode == .honor)
        let data = probeReply.sealed(nonce: received.meta.nonce, key: configuration.key)
        let rr = DNSResourceRecord(name: question.name, ttl: configuration.ttl, rdata: .txt([data]))
        return reply(query, answers: [rr], received.meta.kind == .echo ? .echo : .upload)
    }

    private func download(_ query: DNSMessage, _ question: DNSQuestion, _ meta: ProbeMeta) -> Outcome {
        let type = meta.requestedType
        let count = meta.requestedBytes
        let payload = DownloadLayout.payload(key: configuration.key, nonce: meta.nonce, count: count)
        guard let records = try? DownloadLayout.records(payload: payload, type: type, owner: question.name,
                                                        zone: configuration.zone, ttl: configuration.ttl) else {
            return reply(query, rcode: .refused, .refused)
        }
        var outcome = reply(query, answers: records, .download)
        switch meta.requestedEDNS {
        case .server: break
        case .honor: outcome.ednsMode = .honor
        case .ignore: outcome.ednsMode = .ignore
        }
        return outcome
    }

    private func apex(_ query: DNSMessage, _ question: DNSQuestion) -> Outcome {
        let zone = configuration.zone
        switch question.type {
        case .soa:
            return reply(query, answers: [DNSResourceRecord(name: question.name, ttl: 300, rdata: soa)], .apex)
        case .ns:
            let answers = configuration.nameServers.map { DNSResourceRecord(name: question.name, ttl: 300, rdata: .ns($0.name)) }
            let glue = configuration.nameServers.compactMap { ns in
                ns.ipv4.map { DNSResourceRecord(name: ns.name, ttl: 300, rdata: .a($0)) }
            }
            return reply(query, answers: answers, additionals: glue, .apex)
        default:
            return reply(query, authorities: [DNSResourceRecord(name: zone, ttl: 0, rdata: soa)], .apex)
        }
    }

    func reply(_ query: DNSMessage, rcode: DNSRcode = .noError, answers: [DNSResourceRecord] = [],
               authorities: [DNSResourceRecord] = [], additionals: [DNSResourceRecord] = [],
               _ disposition: Disposition) -> Outcome {
        var header = DNSHeader(id: query.header.id)
        header.isResponse = true
        header.opcode = query.header.opcode
        header.recursionDesired = query.header.recursionDesired
        header.authoritative = rcode != .refused && rcode != .formErr && rcode != .notImp
        var message = DNSMessage(header: header, questions: query.questions, answers: answers,
                                 authorities: authorities, additionals: additionals,
                                 edns: query.edns.map { _ in EDNS(udpPayloadSize: Self.ednsSize) })
        message.rcode = rcode
        return Outcome(response: nil, disposition: disposition, message: message,
                       askerLimit: Int(max(512, query.edns?.udpPayloadSize ?? 512)))
    }

    /// The one place where an answer meets its transport's size rules (see the type's comment).
    private func finish(_ outcome: Outcome, queryBytes: Int) -> Outcome {
        guard var message = outcome.message else { return outcome }
        let disposition = outcome.disposition
        let authenticated = Self.authenticated.contains(disposition)
        var limit = 65_535
        if transport == .udp {
            let mode = outcome.ednsMode ?? configuration.ednsMode
            if !(authenticated && mode == .ignore) { limit = outcome.askerLimit }
            if !authenticated { limit = min(limit, queryBytes) }
        }
        guard let wire = try? message.serialized(), wire.count <= limit else {
            // Too large for the asker's buffer (or an amplification): TC with no records, and the
            // resolver decides, normally by asking again over TCP (RFC 6891 7, RFC 7766 5).
            message.answers = []
            message.authorities = []
            message.additionals = []
            message.header.truncated = true
            return Outcome(response: try? message.serialized(),
                           disposition: disposition == .download ? .downloadTruncated : disposition)
        }
        return Outcome(response: wire, disposition: disposition)
    }

    /// FORMERR carrying only the 12-byte header, so it is never larger than what arrived.
    private func formErr(_ bytes: [UInt8]) -> Outcome {
        guard bytes.count >= 12, bytes[2] & 0x80 == 0 else { return Outcome(response: nil, disposition: .dropped) }
        var header = Array(bytes[0..<12])
        header[2] = 0x80 | (bytes[2] & 0x79)     // QR, keep opcode and RD
        header[3] = 0x01                         // FORMERR
        for i in 4..<12 { header[i] = 0 }
        return Outcome(response: header, disposition: .formErr)
    }
}
