public import Base

/// The stages of a scan, in the order a pair goes through them.
public enum ScanStage: String, Codable, Sendable, Hashable, CaseIterable {
    case reachability, honesty, upload, download, confirmation
}

/// One resolver-domain pair.
public struct ScanPair: Codable, Sendable, Hashable {
    public var resolver: String
    public var domain: String
    public var accepted: Bool
    /// The stage that rejected the pair.
    public var stage: ScanStage?
    /// Why it was rejected, e.g. "download: TC bit set at every size".
    public var reason: String?
    /// The failure class (timeout, tc, servfail, rewritten, wrongSize, caseChanged, ...).
    public var failure: ProbeFailure?
    public var upload: Upload?
    public var download: Download?
    /// Every record type measured (`scan --record-type TXT,NULL`), `download` first; nil when only one was.
    public var downloads: [Download]?
    /// Record types after the first whose download search found no size, with the failure that stopped it.
    public var downloadFailures: [String: ProbeFailure]?
    /// Median round-trip time of the pair's answered probes.
    public var rttMs: Double?
    public var confirmation: Confirmation?
    public var queries: Int
    /// Where this pair was measured, set when scans from several vantage points are merged.
    public var vantage: String?
    /// Confirmation probes that got no answer within the timeout, of those sent (RFC 7680 2.4: a
    /// packet is lost when it does not arrive within Tmax), with the Wilson 95 % interval.
    public var loss: Proportion?
    /// The loss ratio is above `settings.maxLoss`: the pair carries, but is left out of the exports
    /// and the synced MTU.
    public var lossExceeded: Bool?
    /// How the client reached the resolver (nil in reports from before transports were named: UDP).
    public var transport: DNSTransport?
    /// Why a TCP, TLS or HTTPS connection to the resolver failed (the pair then fails reachability).
    public var transportFailure: TransportFailure?

    /// Accepted and within the loss threshold: what the exports and the synced MTU take.
    public var usable: Bool { accepted && lossExceeded != true }

    /// "50.0 % (19–81 %, 3 of 6)": the loss ratio, its Wilson 95 % interval and its counts; "-" when
    /// nothing measured it.
    public var lossText: String {
        guard let loss, let ratio = loss.ratio, let low = loss.ciLow, let high = loss.ciHigh else { return "-" }
        func pct(_ v: Double) -> String { String(format: "%.0f", v * 100) }
        return String(format: "%.1f %%", ratio * 100) + " (\(pct(low))–\(pct(high)) %, \(loss.count) of \(loss.samples))"
    }

    public init(resolver: String, domain: String, accepted: Bool, stage: ScanStage? = nil, reason: String? = nil,
                failure: ProbeFailure? = nil, upload: Upload? = nil, download: Download? = nil, rttMs: Double? = nil,
                confirmation: Confirmation? = nil, queries: Int = 0, vantage: String? = nil) {
        self.resolver = resolver
        self.domain = domain
        self.accepted = accepted
        self.stage = stage
        self.reason = reason
        self.failure = failure
        self.upload = upload
        self.download = download
        self.rttMs = rttMs
        self.confirmation = confirmation
        self.queries = queries
        self.vantage = vantage
    }

    public struct Upload: Codable, Sendable, Hashable {
        /// Payload bytes one query carries (the name's capacity in `encoding`, less any frame overhead).
        public var bytes: Int
        /// Text length of the longest QNAME that arrived intact.
        public var qnameChars: Int
        public var payloadChars: Int
        public var encoding: String
        /// What failed just above the chosen size (nil when the largest size tried passed).
        public var limitedBy: SizeLimit?
        /// The resolver changed letter case on the way (harmless for case-insensitive encodings).
        public var caseChanged: Bool
        public init(bytes: Int, qnameChars: Int, payloadChars: Int, encoding: String, limitedBy: SizeLimit?, caseChanged: Bool) {
            self.bytes = bytes
            self.qnameChars = qnameChars
            self.payloadChars = payloadChars
            self.encoding = encoding
            self.limitedBy = limitedBy
            self.caseChanged = caseChanged
        }
    }

    public struct Download: Codable, Sendable, Hashable {
        /// Payload bytes one response carries in `recordType`.
        public var bytes: Int
        /// Size in bytes of the largest DNS response message that arrived intact.
        public var responseSize: Int
        public var recordType: String
        public var limitedBy: SizeLimit?
        /// The EDNS UDP size the resolver advertised upstream, as the responder saw it in the
        /// query's OPT record (0: no EDNS); nil when the responder did not say.
        public var upstreamEDNS: Int?
        /// Which leg of the path bound the size (`limitedBy` tells how): the client's leg to the
        /// resolver (TC toward the client: its UDP limit) or the resolver's leg to the responder
        /// (the EDNS size the resolver advertises upstream). nil when neither did (the record type,
        /// loss, a failure).
        public var limitingLeg: PathLeg?
        /// "upstream EDNS 1232", "TC", ...: what bound the search, for the tables.
        public var limitText: String {
            switch limitedBy {
            case nil: "-"
            case .upstreamEDNS: "upstream EDNS" + (upstreamEDNS.map { " \($0)" } ?? "")
            case .resolverLimit: "TC"
            case let other?: other.phrase
            }
        }

        public init(bytes: Int, responseSize: Int, recordType: String, limitedBy: SizeLimit?, upstreamEDNS: Int? = nil) {
            self.upstreamEDNS = upstreamEDNS
            self.bytes = bytes
            self.responseSize = responseSize
            self.recordType = recordType
            self.limitedBy = limitedBy
        }
    }

    /// Confirmation probes that were lost (no answer within the timeout), 95 % Wilson interval.
    public static func loss(lost: Int, sent: Int) -> Proportion? {
        sent > 0 ? Proportion(count: lost, samples: sent) : nil
    }

    public struct Confirmation: Codable, Sendable, Hashable {
        public var sent: Int
        public var succeeded: Int
        public var ratio: Double
        public init(sent: Int, succeeded: Int) {
            self.sent = sent
            self.succeeded = succeeded
            self.ratio = sent == 0 ? 0 : Double(succeeded) / Double(sent)
        }
    }
}

/// A leg of the path a query takes: client to resolver, resolver to the domain's server.
public enum PathLeg: String, Codable, Sendable, Hashable, CaseIterable {
    case clientLeg, resolverToServer

    /// The leg a size limit belongs to: TC comes from the resolver toward the client (RFC 1035
    /// 4.2.1; over TCP, TLS and HTTPS only a resolver's own cap sets it), the upstream EDNS size from
    /// the resolver toward the server (RFC 6891 6.2.3).
    public init?(_ limit: SizeLimit?) {
        switch limit {
        case .resolverLimit?: self = .clientLeg
        case .upstreamEDNS?: self = .resolverToServer
        default: return nil
        }
    }
}

/// What bound a size search: the failure just above the chosen size. Written to scan.json as the
/// string forms below (the probe failure names of schema 1, and the three added with it).
public enum SizeLimit: String, Codable, Sendable, Hashable, CaseIterable {
    /// The resolver's own UDP limit toward the client: it answered with TC (RFC 1035 4.2.1).
    case resolverLimit = "tc"
    /// The EDNS UDP size the resolver advertises upstream (RFC 6891 6.2.3): a responder that honours
    /// it (`serve --edns honor`, or any authoritative server) truncates larger answers.
    case upstreamEDNS
    /// The record type cannot carry more under this domain (the search's top passed).
    case recordType
    /// The size above failed only by timeouts on a pair whose confirmation showed loss: loss, not
    /// a size limit, may be what stopped the search.
    case loss
    case timeout, servfail, refused, formerr, nxdomain, rcode, rewritten, wrongSize, caseChanged, unauthenticated,
         noAnswer, malformed, sendFailed
    /// A value this version does not know (a report from a newer one).
    case unknown

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        self = SizeLimit(rawValue: text) ?? .unknown
    }

    public var phrase: String {
        switch self {
        case .resolverLimit: "the resolver's UDP limit toward the client (TC)"
        case .upstreamEDNS: "the EDNS size the resolver advertises upstream"
        case .recordType: "what the record type can carry"
        case .loss: "loss"
        default: rawValue
        }
    }
}
