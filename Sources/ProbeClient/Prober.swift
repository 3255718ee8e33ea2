public import Base
public import DNSWire
public import NIOCore
public import ProbeProtocol
public import Results

public struct ProbeOutcome: Sendable {
    public var failure: ProbeFailure?
    public var detail: String?
    public var rttNanos: UInt64?
    /// Size of the response datagram as it arrived.
    public var responseSize: Int?
    public var caseChanged = false
    /// What the responder saw of the query (echo and upload replies of current responders).
    public var observed: ProbeReply.Observed?
    /// The SERVFAIL carried Extended DNS Error 13, "Cached Error" (RFC 8914 4.14): the resolver
    /// answered from its cache of an earlier failure, not from this query.
    public var cachedError = false
    /// The failure came back again after the resolver's failure cache was waited out: it belongs to
    /// this probe, and another attempt would only poison the cache again.
    public var settled = false
    /// A timeout while the scan's congestion window saw congestion (`CongestionWindow`): the scan's
    /// own load may have lost it, so it says nothing about the size and is tried again.
    public var congested = false
    /// A timeout while other expected answers were lost too (`CongestionWindow.Completion.othersLost`):
    /// the loss may be the scan's or the shared path's, so it is no clean evidence either.
    public var lostWithOthers = false
    public var ok: Bool { failure == nil }

    public init(failure: ProbeFailure? = nil, detail: String? = nil, rttNanos: UInt64? = nil, responseSize: Int? = nil) {
        self.failure = failure
        self.detail = detail
        self.rttNanos = rttNanos
        self.responseSize = responseSize
    }

    static func fail(_ f: ProbeFailure, _ detail: String? = nil, rtt: UInt64? = nil, size: Int? = nil) -> ProbeOutcome {
        ProbeOutcome(failure: f, detail: detail, rttNanos: rtt, responseSize: size)
    }
}

/// Sends single probes through a resolver and judges what comes back.
public struct Prober: Sendable {
    public var engine: QueryEngine
    public var key: ProbeKey
    public var encoding: LabelEncoding
    public var timeout: TimeAmount
    public var ednsSize: UInt16
    public var pacer: Pacer?
    /// The scan-wide window of queries in flight (`CongestionWindow`); nil sends without one.
    public var congestion: CongestionWindow?
    /// What download probes ask of the responder's EDNS handling (`scan --edns`).
    public var ednsRequest: ProbeMeta.EDNSRequest = .server
    /// The resolvers reached over TCP, TLS or HTTPS and the engine that carries their queries
    /// (`Transports/`); a resolver not in `targets` is asked over UDP through `engine`.
    public var transports: ResolverTransports?
    public var targets: [Endpoint: ResolverTarget] = [:]

    /// The transport queries to `resolver` take.
    public func transport(of resolver: Endpoint) -> DNSTransport { targets[resolver]?.transport ?? .udp }

    /// Writes the resolver's transport into a pair, and its address in the form that names it.
    func name(_ pair: inout ScanPair, _ resolver: Endpoint) {
        let target = targets[resolver] ?? ResolverTarget(endpoint: resolver)
        pair.resolver = target.description
        pair.transport = target.transport
    }

    /// One exchange over the resolver's transport: UDP through `engine`, the others through `transports`.
    func send(_ bytes: [UInt8], resolver: Endpoint, address: SocketAddress) async -> QueryResult {
        if let target = targets[resolver], target.transport != .udp {
            guard let transports else { return .sendFailed("no engine for \(target.transport)") }
            return await transports.query(bytes, to: target, timeout: timeout)
        }
        return await engine.query(bytes, to: address, timeout: timeout)
    }

    public init(engine: QueryEngine, key: ProbeKey, encoding: LabelEncoding = .base32, timeout: TimeAmount = .seconds(2),
                ednsSize: UInt16 = 4096, pacer: Pacer? = nil) {
        self.engine = engine
        self.key = key
        self.encoding = encoding
        self.timeout = timeout
        self.ednsSize = ednsSize
        self.pacer = pacer
    }

    /// Whether the responder's answers to this prober's downloads meet the size the resolver
    /// advertises upstream: asked so (`--edns honor`), or left to a responder set to honour it.
    public func honorsUpstream(_ upstream: ProbeReply.Observed) -> Bool {
        ednsRequest == .honor || (ednsRequest == .server && upstream.honorsEDNS)
    }

    /// 8 bytes from the system CSPRNG. Nonces are not seeded on purpose: a rerun with the same seed
    /// must still ask names no cache has seen.
    public static func nonce() -> [UInt8] {
        NoncePool.shared.next()
    }

    /// The query for `name`: RD set, an OPT record advertising `ednsSize` (the id is the engine's).
    /// Written straight to bytes (`DNSMessage.queryBytes`, the same bytes as serializing the message).
    func message(name: DNSName, type: DNSType) throws(DNSWireError) -> [UInt8] {
        DNSMessage.queryBytes(id: 0, name: name, type: type, recursionDesired: true, udpPayloadSize: ednsSize)
    }

    func exchange(_ bytes: [UInt8], resolver: Endpoint, question: DNSQuestion) async -> (DNSMessage?, ProbeOutcome) {
        let (result, window) = await exchangeResult(bytes, resolver: resolver)
        let (message, classified) = Self.classify(result, question: question)
        var outcome = classified
        window.mark(&outcome)
        return (message, outcome)
    }

    /// What the congestion window said about one exchange, for its outcome.
    struct WindowMarks {
        /// Timed out while the window saw congestion.
        var congested = false
        /// Timed out while other expected answers were lost too.
        var lostWithOthers = false

        func mark(_ outcome: inout ProbeOutcome) {
            if congested { outcome.congested = true }
            if lostWithOthers { outcome.lostWithOthers = true }
        }
    }

    /// One exchange through the pacer and the congestion window, before anything is read of the answer.
    func exchangeResult(_ bytes: [UInt8], resolver: Endpoint) async -> (QueryResult, WindowMarks) {
        if let pacer { await pacer.wait(for: resolver) }
        guard let address = resolver.socketAddress else { return (.sendFailed("bad address"), WindowMarks()) }
        guard let congestion else {
            return (await send(bytes, resolver: resolver, address: address), WindowMarks())
        }
        let ticket = await congestion.acquire(resolver, quiet: CongestionWindow.quiet)
        let result = await send(bytes, resolver: resolver, address: address)
        var answered = false
        var timedOut = false
        switch result {
        case .response: answered = true
        case .timeout: timedOut = true
        case .sendFailed: break
        }
        let completion = congestion.complete(ticket, resolver: resolver, answered: answered,
                                             expected: CongestionWindow.expected)
        return (result, WindowMarks(congested: timedOut && completion.congested, lostWithOthers: timedOut && completion.othersLost))
    }

    /// What a response says before the probe's own records are read: rcode, TC, an echoed question.
    static func classify(_ result: QueryResult, question: DNSQuestion) -> (DNSMessage?, ProbeOutcome) {
        switch result {
        case .timeout:
            return (nil, .fail(.timeout))
        case .sendFailed(let why):
            return (nil, .fail(.sendFailed, why))
        case .response(let data, let rtt):
            let response: DNSMessage
            do { response = try DNSMessage(parsing: data) } catch {
                return (nil, .fail(.malformed, "\(error)", rtt: rtt, size: data.count))
            }
            var outcome = ProbeOutcome(failure: nil, rttNanos: rtt, responseSize: data.count)
            guard response.header.isResponse, response.questions.count == 1,
                  response.questions[0].type == question.type,
                  response.questions[0].name.equalsIgnoringCase(question.name) else {
                outcome.failure = .malformed
                outcome.detail = "response does not echo the question"
                return (response, outcome)
            }
            if response.header.truncated { outcome.failure = .tc; return (response, outcome) }
            switch response.rcode {
            case .noError: break
            case .servFail:
                outcome.failure = .servfail
                outcome.cachedError = response.edns?.options.contains { option in
                    // RFC 8914 2: INFO-CODE is the option's first two bytes; 13 is "Cached Error".
                    option.code == 15 && option.data.count >= 2 && option.data[0] == 0 && option.data[1] == 13
                } ?? false
            case .refused: outcome.failure = .refused
            case .formErr: outcome.failure = .formerr
            case .nxDomain: outcome.failure = .nxdomain
            default:
                outcome.failure = .rcode
                outcome.detail = "\(response.rcode)"
            }
            return (response, outcome)
        }
    }

    /// Does the resolver answer DNS at all? Any response but REFUSED counts.
    public func reachability(_ resolver: Endpoint, zone: DNSName) async -> ProbeOutcome {
        let q = DNSQuestion(name: zone, type: .soa)
        guard let bytes = try? message(name: zone, type: .soa) else { return .fail(.sendFailed, "cannot build query") }
        var (_, outcome) = await exchange(bytes, resolver: resolver, question: q)
        if let f = outcome.failure, f != .timeout, f != .refused, f != .sendFailed { outcome.failure = nil }
        return outcome
    }

    /// An echo probe: a never-seen name under the zone must get the responder's own authenticated answer.
    /// Its timeout is a congestion signal (`CongestionWindow.expectingAnswer`): the smallest probe
    /// there is says nothing about sizes.
    public func echo(_ resolver: Endpoint, zone: DNSName) async -> ProbeOutcome {
        await CongestionWindow.expectingAnswer {
            await upload(resolver, zone: zone, characters: ProbeMeta.characterCount, kind: .echo)
        }
    }

    /// An upload probe built and ready to send, with what judging its answer needs.
    public struct PreparedUpload: Sendable {
        public let bytes: [UInt8]
        let question: DNSQuestion
        let nonce: [UInt8]
        let sent: [UInt8]
    }

    /// Builds an upload (or echo) probe of `characters` payload characters in front of the zone;
    /// nil when they do not fit under it.
    public func prepareUpload(zone: DNSName, characters: Int, kind: ProbeKind = .upload) -> PreparedUpload? {
        let nonce = Self.nonce()
        let meta = ProbeMeta(kind: kind, encoding: encoding, nonce: nonce, totalCharacters: characters)
        guard let (name, sent) = try? ProbeName.buildWithCharacters(meta: meta, zone: zone, key: key),
              let bytes = try? message(name: name, type: .txt) else { return nil }
        return PreparedUpload(bytes: bytes, question: DNSQuestion(name: name, type: .txt), nonce: nonce, sent: sent)
    }

    /// Judges what came back for a prepared upload probe. An answer laid out as the responder
    /// writes it (`expectedReply`) is read in place; any other goes through the full parse, with
    /// the same outcome for every answer both can read (`ProbeFastPathJudgeTests`).
    public func judge(_ result: QueryResult, for probe: PreparedUpload) -> ProbeOutcome {
        if case .response(let data, let rtt) = result, let reply = Self.expectedReply(data, query: probe.bytes) {
            return judgeReply(reply, ProbeOutcome(failure: nil, rttNanos: rtt, responseSize: data.count),
                              nonce: probe.nonce, sent: probe.sent)
        }
        return judgeByParsing(result, for: probe)
    }

    /// `judge` through the full parse, for any answer.
    func judgeByParsing(_ result: QueryResult, for probe: PreparedUpload) -> ProbeOutcome {
        let (response, outcome) = Self.classify(result, question: probe.question)
        guard outcome.ok, let response else { return outcome }
        return judgeReply(response, outcome, name: probe.question.name, nonce: probe.nonce, sent: probe.sent)
    }

    /// An upload probe of `characters` payload characters in front of the zone.
    public func upload(_ resolver: Endpoint, zone: DNSName, characters: Int, kind: ProbeKind = .upload) async -> ProbeOutcome {
        guard let probe = prepareUpload(zone: zone, characters: characters, kind: kind) else {
            return .fail(.sendFailed, "\(characters) characters do not fit under \(zone)")
        }
        let (result, window) = await exchangeResult(probe.bytes, resolver: resolver)
        var outcome = judge(result, for: probe)
        window.mark(&outcome)
        return outcome
    }

    /// The reply string of an answer with exactly the layout the responder writes for the probe
    /// `query`: QR set, TC clear, NOERROR, the query's question byte for byte, one TXT answer
    /// owned by a pointer to that question with one string of a reply's length, no authority
    /// records and at most an OPT record without options or extended rcode. For such an answer
    /// the full parse (`classify`, `replyBytes`) finds no fault and returns this string; anything
    /// else is nil and goes through the full parse.
    static func expectedReply(_ data: [UInt8], query: [UInt8]) -> [UInt8]? {
        data.withUnsafeBufferPointer { m -> [UInt8]? in
            query.withUnsafeBufferPointer { q -> [UInt8]? in
                guard m.count >= 12, q.count >= 12,
                      m[2] & 0x80 != 0, m[2] & 0x02 == 0, m[3] & 0x0F == 0,
                      m[4] == 0, m[5] == 1, m[6] == 0, m[7] == 1, m[8] == 0, m[9] == 0, m[10] == 0, m[11] <= 1 else { return nil }
                // The query's name: uncompressed labels up to the root octet.
                var end = 12
                while end < q.count, q[end] != 0 {
                    guard q[end] & 0xC0 == 0 else { return nil }
                    end += Int(q[end]) + 1
                }
                // The name and the type (TXT) as the query has them; the class is not read.
                let questionEnd = end + 5
                guard questionEnd <= q.count, q[end + 1] == 0, q[end + 2] == 16, questionEnd <= m.count else { return nil }
                for i in 12..<(end + 3) where m[i] != q[i] { return nil }
                // The answer: pointer to offset 12, TXT, any class and TTL, one string of 20 or 24 bytes.
                var at = questionEnd
                guard at + 12 <= m.count, m[at] == 0xC0, m[at + 1] == 12, m[at + 2] == 0, m[at + 3] == 16 else { return nil }
                let rdataLength = Int(m[at + 10]) << 8 | Int(m[at + 11])
                at += 12
                guard at + rdataLength <= m.count, rdataLength >= 1 else { return nil }
                let length = Int(m[at])
                guard rdataLength == length + 1,
                      length == ProbeReply.byteCount || length == ProbeReply.observedByteCount else { return nil }
                let reply = Array(m[(at + 1)..<(at + 1 + length)])
                at += rdataLength
                if m[11] == 1 {
                    // The OPT: root owner, type 41, any payload size, extended rcode 0, no options.
                    guard at + 11 <= m.count, m[at] == 0, m[at + 1] == 0, m[at + 2] == 41, m[at + 5] == 0,
                          m[at + 9] == 0, m[at + 10] == 0 else { return nil }
                }
                return reply
            }
        }
    }

    private func judgeReply(_ response: DNSMessage, _ base: ProbeOutcome, name: DNSName, nonce: [UInt8],
                            sent: [UInt8]) -> ProbeOutcome {
        guard let data = Self.replyBytes(response, name: name) else {
            var outcome = base
            outcome.failure = response.answers.isEmpty ? .noAnswer : .unauthenticated
            return outcome
        }
        return judgeReply(data, base, nonce: nonce, sent: sent)
    }

    /// Authenticates and reads the reply string of an echo or upload probe's answer.
    private func judgeReply(_ data: [UInt8], _ base: ProbeOutcome, nonce: [UInt8], sent: [UInt8]) -> ProbeOutcome {
        var outcome = base
        let reply: ProbeReply
        do { reply = try ProbeReply.open(data, nonce: nonce, key: key) } catch {
            outcome.failure = .unauthenticated
            outcome.detail = error.message
            return outcome
        }
        outcome.observed = reply.observed
        if reply.receivedCharacters != sent.count {
            outcome.failure = .wrongSize
            outcome.detail = "\(reply.receivedCharacters) of \(sent.count) characters arrived"
        } else if !Keystream.digest(of: sent, is: reply.digest) {
            if reply.integrity == .caseChanged {
                outcome.caseChanged = true
                if encoding.isCaseSensitive { outcome.failure = .caseChanged }
            } else {
                outcome.failure = .rewritten
            }
        }
        return outcome
    }

    static func replyBytes(_ response: DNSMessage, name: DNSName) -> [UInt8]? {
        for rr in response.answers where rr.name.equalsIgnoringCase(name) {
            if case .txt(let strings) = rr.rdata, strings.count == 1,
               strings[0].count == ProbeReply.byteCount || strings[0].count == ProbeReply.observedByteCount {
                return strings[0]
            }
        }
        return nil
    }

    /// A download probe: asks for exactly `bytes` payload bytes in `type`, with a query name of
    /// `queryCharacters` payload characters (a tunnel's responses echo its full-size queries).
    ///
    /// `upstream`, what the responder saw of an earlier probe of this pair: when the responder honours
    /// the EDNS size the resolver advertised upstream, an answer larger than that size would go out
    /// truncated over UDP (a tunnel server's only transport) and reach the client only because the
    /// resolver retried over TCP. Such a size fails as `upstreamEDNS` without being sent: the
    /// client builds the responder's answer itself (same codec, same records) to know its size.
    public func download(_ resolver: Endpoint, zone: DNSName, bytes count: Int, type: DNSType,
                         queryCharacters: Int = ProbeMeta.characterCount,
                         upstream: ProbeReply.Observed? = nil) async -> ProbeOutcome {
        let nonce = Self.nonce()
        let meta = ProbeMeta.download(nonce: nonce, bytes: count, type: type, encoding: encoding,
                                      totalCharacters: max(ProbeMeta.characterCount, queryCharacters), edns: ednsRequest)
        guard let name = try? ProbeName.build(meta: meta, zone: zone, key: key),
              let bytes = try? message(name: name, type: type) else {
            return .fail(.sendFailed, "cannot build the download probe")
        }
        if let upstream, honorsUpstream(upstream),
           let size = Self.responderAnswerSize(name: name, type: type, zone: zone, payload: count, key: key, nonce: nonce),
           size > upstream.udpLimit {
            return .fail(.upstreamEDNS, "the responder's answer of \(size) bytes is above the \(upstream.udpLimit) bytes the resolver advertises upstream")
        }
        let q = DNSQuestion(name: name, type: type)
        let (response, outcome) = await exchange(bytes, resolver: resolver, question: q)
        guard outcome.ok, let response else { return outcome }
        // A 20-byte authenticated reply instead of payload: the responder saw the query damaged.
        if let data = Self.replyBytes(response, name: name),
           let reply = try? ProbeReply.open(data, nonce: nonce, key: key) {
            var o = outcome
            o.failure = reply.integrity == .lengthMismatch ? .wrongSize : .rewritten
            o.detail = "the query arrived \(reply.integrity)"
            return o
        }
        var result = outcome
        do {
            let payload = try DownloadLayout.extract(answers: response.answers, type: type, owner: name, zone: zone,
                                                     expected: count)
            if payload.count != count {
                result.failure = .wrongSize
                result.detail = "\(payload.count) of \(count) bytes arrived"
            } else if payload != DownloadLayout.payload(key: key, nonce: nonce, count: count) {
                result.failure = .rewritten
            }
        } catch {
            result.failure = response.answers.isEmpty ? .noAnswer : .malformed
            result.detail = error.message
        }
        return result
    }
}

extension Prober {
    /// The size of the answer the responder sends for a download probe (with its own OPT record, as
    /// the resolver's query carries one), built with the responder's codec and records.
    static func responderAnswerSize(name: DNSName, type: DNSType, zone: DNSName, payload count: Int, key: ProbeKey,
                                    nonce: [UInt8]) -> Int? {
        let payload = DownloadLayout.payload(key: key, nonce: nonce, count: count)
        guard let records = try? DownloadLayout.records(payload: payload, type: type, owner: name, zone: zone) else { return nil }
        var header = DNSHeader(id: 0)
        header.isResponse = true
        let message = DNSMessage(header: header, questions: [DNSQuestion(name: name, type: type)], answers: records,
                                 edns: EDNS(udpPayloadSize: 4096))
        return try? message.serialized().count
    }
}

extension Endpoint {
    var socketAddress: SocketAddress? {
        try? SocketAddress(ipAddress: host, port: Int(port))
    }
}

/// Spaces the queries sent to each resolver (`--per-resolver-qps`), so a scan never floods one.
public actor Pacer {
    private let interval: UInt64
    private var next: [Endpoint: UInt64] = [:]

    public init(queriesPerSecond: Double) {
        interval = queriesPerSecond > 0 ? UInt64(1e9 / queriesPerSecond) : 0
    }

    public func wait(for resolver: Endpoint) async {
        guard interval > 0 else { return }
        let now = NIODeadline.now().uptimeNanoseconds
        let slot = max(now, next[resolver] ?? 0)
        next[resolver] = slot + interval
        if slot > now { try? await Task.sleep(nanoseconds: slot - now) }
    }
}
