public import Base
import Capture
import DNSWire
import Foundation

/// What dnstt-client's queries got back from its UDP resolver: the wire evidence that tells apart
/// the handshake failures its log cannot (`DnsttLog.timeoutReason`). Read from a capture of the
/// carrier in both directions (`DnsttCarrierCapture`) or a recorded pcap (Fixtures/dnstt).
///
/// From dnstt's source (upstream e5e873b): dnstt-server answers every query under its domain
/// NOERROR with one TXT record (`sendLoop`, filled with downstream packets or empty), and its Noise
/// responder closes a session whose first message does not decrypt (`acceptStreams: chacha20poly1305:
/// message authentication failed`) without a reply; the client drops answers that are not NOERROR
/// with one TXT record (`dnsResponsePayload`) and logs nothing about them. So:
/// - the server's TXT answers arrive and the handshake never ends: the server is there, the key is
///   not its key (a wrong public key);
/// - the resolver answers, but only SERVFAIL/NXDOMAIN/REFUSED: no dnstt-server behind the domain;
/// - no answer at all to the client's queries: a resolver (or a path to it) that drops them;
/// - answers with TC: a resolver that truncates what the server sends (the client drops them).
public struct DnsttCarrierTally: Sendable, Hashable {
    /// The client's queries to the resolver for names under the domain.
    public var queries = 0
    /// The resolver's responses to them (any RCODE).
    public var answers = 0
    /// NOERROR responses with an answer to a TXT question: dnstt-server's (a resolver makes up no
    /// TXT data under a tunnel domain).
    public var tunnelAnswers = 0
    /// Responses with TC=1 (RFC 1035 4.1.1): cut to the resolver's limit.
    public var truncated = 0
    /// Responses by RCODE name, for the ones that are not NOERROR.
    public var errors: [String: Int] = [:]
    /// verify's own control query to the same resolver at a handshake timeout (`localhost. A`,
    /// which a resolver answers from its own data or the root's NXDOMAIN): nil when none was sent,
    /// else whether the resolver answered it. It tells a resolver that answers nothing from one
    /// that answers but not for the tunnel's domain.
    public var controlAnswered: Bool?

    /// The control query's name and id (fixed: no randomness to seed).
    static let controlName = "localhost"
    static let controlID: UInt16 = 0x7470

    public init() {}

    /// Tallies Ethernet frames (the sandbox's uplink) between the client and `resolver` for names
    /// under `domain`. Total: frames that are not such DNS messages are skipped.
    public init(frames: [[UInt8]], resolver: Endpoint, domain: String) {
        let suffix = "." + domain.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "."))
        for frame in frames {
            guard let udp = Self.udp(frame), let message = try? DNSMessage.summary(parsing: udp.payload),
                  let question = message.question else { continue }
            let name = "." + question.name.description.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "."))
            if name == "." + Self.controlName, message.header.id == Self.controlID {
                if !message.header.isResponse, udp.destination == resolver.host {
                    if controlAnswered == nil { controlAnswered = false }
                } else if message.header.isResponse, udp.source == resolver.host {
                    controlAnswered = true
                }
                continue
            }
            guard name.hasSuffix(suffix) else { continue }
            if !message.header.isResponse {
                if udp.destination == resolver.host, udp.destinationPort == resolver.port { queries += 1 }
                continue
            }
            guard udp.source == resolver.host, udp.sourcePort == resolver.port else { continue }
            answers += 1
            if message.header.truncated { truncated += 1 }
            if message.header.rcode == .noError {
                if message.answerCount > 0, question.type == .txt { tunnelAnswers += 1 }
            } else {
                errors[message.header.rcode.description, default: 0] += 1
            }
        }
    }

    /// Reads a capture file; an unreadable or cut file gives what was read before the problem.
    public init(pcap path: String, resolver: Endpoint, domain: String) {
        var frames: [[UInt8]] = []
        if let reader = try? CaptureFileReader(path: path) {
            try? reader.forEachFrame { bytes, _, _ in frames.append(Array(bytes)) }
        }
        self.init(frames: frames, resolver: resolver, domain: domain)
    }

    /// What the tally says about a handshake that never ended, or nil when it says nothing (the
    /// client sent no query the capture saw). Truncation first: a truncating resolver also lets the
    /// server's small (empty) answers through.
    public func handshakeFailure(resolver: Endpoint, domain: String) -> String? {
        guard queries > 0 else { return nil }
        let counts = "\(queries) queries, \(answers) answers"
        if truncated > 0 {
            return "handshake timeout: the resolver truncates dnstt-server's answers: \(truncated) of \(answers) answers came back with TC (\(counts)); dnstt-client drops them. Lower the server's -mtu to what the resolver delivers (scan's download limit)"
        }
        if tunnelAnswers > 0 {
            return "handshake timeout: wrong server public key: dnstt-server answered (\(tunnelAnswers) NOERROR TXT answers; \(counts)) but the Noise handshake never completed: the server's key is not the profile's dnstt.pubkey (or the server speaks another dnstt version)"
        }
        if answers == 0, controlAnswered == true {
            return "handshake timeout: no dnstt-server answers for \(domain): the resolver answered a control query (\(Self.controlName). A) but none of the client's \(queries) queries for \(domain): the server is absent or unreachable from the resolver"
        }
        if answers == 0 {
            return "handshake timeout: the resolver drops the queries: \(queries) queries to \(resolver) for \(domain), no answer at all" + (controlAnswered == false ? ", nor to a control query (\(Self.controlName). A)" : "")
        }
        if !errors.isEmpty {
            let codes = errors.sorted { $0.key < $1.key }.map { "\($0.key) x\($0.value)" }.joined(separator: ", ")
            return "handshake timeout: no dnstt-server answers for \(domain): the resolver answered \(codes) (\(counts)); the server is absent or unreachable from the resolver"
        }
        return "handshake timeout: the resolver answers without tunnel data (\(counts), none a TXT answer): something other than dnstt-server answers for \(domain)"
    }

    /// Sends the control query to the resolver from the sandbox (on the carrier's path, while the
    /// carrier capture still runs, so the pcap holds it) and waits up to `wait` for its answer.
    static func sendControlQuery(resolver: Endpoint, namespacePath: String, wait: Duration) async {
        guard resolver.port == 53, let name = try? DNSName(controlName) else { return }
        _ = await SandboxProbes.dnsQueries([DNSMessage.queryBytes(id: controlID, name: name, type: .a)], server: resolver.host,
                                           namespacePath: namespacePath, wait: wait)
    }

    /// Wire evidence for a data stall after the handshake: truncated answers, or nil.
    public var truncationEvidence: String? {
        truncated > 0 ? "the resolver truncated \(truncated) of \(answers) answers (TC) on the wire" : nil
    }

    /// Source and destination of a UDP datagram in an Ethernet frame (IPv4 or IPv6 without
    /// extension headers), and its payload.
    static func udp(_ frame: [UInt8]) -> (source: String, sourcePort: UInt16, destination: String, destinationPort: UInt16, payload: [UInt8])? {
        guard frame.count >= 14 else { return nil }
        let etherType = UInt16(frame[12]) << 8 | UInt16(frame[13])
        let ip = frame[14...]
        let start = ip.startIndex
        let source: IPAddress?, destination: IPAddress?, offset: Int
        switch etherType {
        case 0x0800:
            guard ip.count >= 20, ip[start] >> 4 == 4, ip[start + 9] == 17 else { return nil }
            offset = start + Int(ip[start] & 0x0f) * 4
            source = IPAddress(bytes: ip[(start + 12)..<(start + 16)])
            destination = IPAddress(bytes: ip[(start + 16)..<(start + 20)])
        case 0x86DD:
            guard ip.count >= 40, ip[start] >> 4 == 6, ip[start + 6] == 17 else { return nil }
            offset = start + 40
            source = IPAddress(bytes: ip[(start + 8)..<(start + 24)])
            destination = IPAddress(bytes: ip[(start + 24)..<(start + 40)])
        default:
            return nil
        }
        guard let source, let destination, offset + 8 <= frame.count else { return nil }
        let sourcePort = UInt16(frame[offset]) << 8 | UInt16(frame[offset + 1])
        let destinationPort = UInt16(frame[offset + 2]) << 8 | UInt16(frame[offset + 3])
        return (source.description, sourcePort, destination.description, destinationPort, Array(frame[(offset + 8)...]))
    }
}

/// The capture behind `DnsttCarrierTally` during a run: UDP between the sandbox and the resolver,
/// both directions, headers and questions only (snap length 512), on the sandbox's uplink. Kept at
/// `path`: the run's directory, `uplink.carrier.pcap` next to verify's `uplink.pcap`.
final class DnsttCarrierCapture: Sendable {
    private let live: LiveCapture
    let path: String
    let resolver: Endpoint
    let domain: String

    private init(live: LiveCapture, path: String, resolver: Endpoint, domain: String) {
        self.live = live
        self.path = path
        self.resolver = resolver
        self.domain = domain
    }

    /// Next to the uplink capture's file: `uplink.pcap` -> `uplink.carrier.pcap`.
    static func path(beside uplink: String) -> String {
        (uplink.hasSuffix(".pcap") ? String(uplink.dropLast(5)) : uplink) + ".carrier.pcap"
    }

    static func start(namespacePath: String, interface: String, path: String, resolver: Endpoint, domain: String) async throws(VerifyError) -> DnsttCarrierCapture {
        let family = resolver.isIPv6 ? "ip6" : "ip"
        let live = LiveCapture(device: interface, filter: "\(family) host \(resolver.host) and udp port \(resolver.port)", snapLength: 512, writeTo: path)
        try await UplinkCapture.start(live, namespacePath: namespacePath, what: "cannot capture the dnstt carrier on \(interface)")
        return DnsttCarrierCapture(live: live, path: path, resolver: resolver, domain: domain)
    }

    /// Stops the capture (after a moment for frames in flight) and tallies it; idempotent.
    func stop() async -> DnsttCarrierTally {
        try? await ContinuousClock().sleep(for: .milliseconds(30))
        _ = live.stop()
        return DnsttCarrierTally(pcap: path, resolver: resolver, domain: domain)
    }
}
