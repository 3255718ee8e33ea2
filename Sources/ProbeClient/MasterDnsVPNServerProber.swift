public import Base
public import DNSWire
public import ProbeProtocol

/// Probes sent straight to the user's own MasterDnsVPN server (Go edition) through a resolver, in
/// the engine's own MTU-test requests (`scan --server masterdnsvpn`): no `serve`, nothing deployed.
/// Transport, pacing and the scan's congestion window are the `Prober`'s.
///
/// The server's replies carry no MAC (`MasterDnsVPNMTUProbe`): an answer counts as the server's when
/// it is a well-formed MTU reply that echoes the request's random 4-byte code and size.
public struct MasterDnsVPNServerProber: Sendable {
    public var prober: Prober
    public var probe: MasterDnsVPNMTUProbe

    public init(prober: Prober, probe: MasterDnsVPNMTUProbe) {
        self.prober = prober
        self.probe = probe
    }

    /// The smallest upload request the engine sends (its search floor): the honest-answer stage, and
    /// the control that tells a bad moment from a size limit. Its timeout is a congestion signal.
    public func echo(_ resolver: Endpoint, zone: DNSName) async -> ProbeOutcome {
        await CongestionWindow.expectingAnswer {
            await upload(resolver, zone: zone, bytes: MasterDnsVPNMTUProbe.uploadRange.lowerBound)
        }
    }

    /// An MTU_UP_REQ carrying `bytes` payload bytes.
    public func upload(_ resolver: Endpoint, zone: DNSName, bytes: Int) async -> ProbeOutcome {
        guard let request = probe.upload(size: bytes, zone: zone) else {
            return .fail(.sendFailed, "an upload of \(bytes) bytes does not fit under \(zone)")
        }
        return await send(request, to: resolver)
    }

    /// An MTU_DOWN_REQ asking for `bytes`, padded to `uploadMTU` bytes as the engine pads it.
    public func download(_ resolver: Endpoint, zone: DNSName, bytes: Int, uploadMTU: Int) async -> ProbeOutcome {
        guard let request = probe.download(size: bytes, uploadMTU: uploadMTU, zone: zone) else {
            return .fail(.sendFailed, "a download request padded to \(uploadMTU) bytes does not fit under \(zone)")
        }
        return await send(request, to: resolver)
    }

    func send(_ request: MasterDnsVPNMTUProbe.Request, to resolver: Endpoint) async -> ProbeOutcome {
        guard let bytes = try? prober.message(name: request.name, type: .txt) else {
            return .fail(.sendFailed, "cannot build the query")
        }
        let question = DNSQuestion(name: request.name, type: .txt)
        let (response, outcome) = await prober.exchange(bytes, resolver: resolver, question: question)
        guard outcome.ok, let response else {
            var o = outcome
            if o.failure == .nxdomain, o.detail == nil {
                o.detail = "the server (or the resolver) says the name does not exist: is the domain one the server serves?"
            }
            return o
        }
        return Self.judge(response, outcome, request: request, probe: probe)
    }

    /// Judges an answer that got past the rcode and TC checks.
    static func judge(_ response: DNSMessage, _ base: ProbeOutcome, request: MasterDnsVPNMTUProbe.Request,
                      probe: MasterDnsVPNMTUProbe) -> ProbeOutcome {
        var outcome = base
        let records: [[UInt8]] = response.answers.compactMap { rr in
            guard rr.name.equalsIgnoringCase(request.name), case .txt(let strings) = rr.rdata else { return nil }
            return strings.flatMap { $0 }
        }
        guard !records.isEmpty else {
            outcome.failure = .noAnswer
            outcome.detail = Self.noRecordsDetail
            return outcome
        }
        switch probe.judge(records: records, for: request) {
        case .passed: break
        case .foreign(let why):
            outcome.failure = .unauthenticated
            outcome.detail = why
        case .wrongSize(let why):
            outcome.failure = .wrongSize
            outcome.detail = why
        }
        return outcome
    }

    /// The Go server answers a request it cannot decrypt or parse with NOERROR and no records
    /// (internal/udpserver/server_ingress.go handleTunnelCandidate: "vpn-proto-parse-failed").
    static let noRecordsDetail =
        "NOERROR without TXT records: the server could not read the request (another key or --encryption-method?), or it is not a MasterDnsVPN server"
}

extension MasterDnsVPNServerProber {
    /// For the fuzz target `mdvreply`: judges `message` as the reply to an upload and a download
    /// request under its own question's zone, with each reply encoding, and reads its question
    /// back as a request; any outcome but a trap is right.
    public static func fuzzJudge(_ message: DNSMessage) {
        guard let question = message.questions.first, let zone = try? DNSName("vpn.lab.test"),
              let cipher = try? MasterDnsVPNCipher(method: Int(message.header.id % 6), keyText: "fuzz") else { return }
        for base64 in [false, true] {
            let probe = MasterDnsVPNMTUProbe(cipher: cipher, base64Replies: base64)
            _ = probe.parseRequest(name: question.name, zone: zone)
            for request in [probe.upload(size: 40, zone: zone, code: 1), probe.download(size: 600, uploadMTU: 40, zone: zone, code: 1)] {
                guard let request else { continue }
                let renamed = DNSMessage(header: message.header, questions: [DNSQuestion(name: request.name, type: .txt)],
                                         answers: message.answers.map { DNSResourceRecord(name: request.name, ttl: $0.ttl, rdata: $0.rdata) })
                _ = judge(renamed, ProbeOutcome(), request: request, probe: probe)
            }
        }
    }
}
