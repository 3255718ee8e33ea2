/// What `trace` found in one or more captures: the settings it ran with, the files, packet counts,
/// and transaction metrics per resolver and in total. Reports turns it into `trace.json`.
public struct TraceResult: Codable, Sendable, Hashable {
    public var settings: TraceSettings
    public var files: [TraceFile]
    public var packets: TracePackets
    /// Every resolver together.
    public var totals: TraceStats
    /// Per resolver (`ip:port` the queries went to), each with its per tunnel domain x record type groups.
    public var resolvers: [TraceStats]
    /// Domains seen, with the engine their traffic looks like.
    public var domains: [TraceDomain]

    public init(settings: TraceSettings, files: [TraceFile], packets: TracePackets, totals: TraceStats, resolvers: [TraceStats],
                domains: [TraceDomain]) {
        self.settings = settings
        self.files = files
        self.packets = packets
        self.totals = totals
        self.resolvers = resolvers
        self.domains = domains
    }
}

/// The options a trace ran with.
public struct TraceSettings: Codable, Sendable, Hashable {
    /// RFC 7680 Tmax: a query without a response within it is lost.
    public var tmaxMs: Double
    /// How long after Tmax a response still counts as late (and not as unmatched).
    public var lateWindowMs: Double
    public var filter: String?
    public var dnsPorts: [Int]
    /// Labels at least this long are taken as encoded tunnel data (tunnel-domain grouping).
    public var encodedLabelMin: Int

    public init(tmaxMs: Double, lateWindowMs: Double, filter: String?, dnsPorts: [Int], encodedLabelMin: Int) {
        self.tmaxMs = tmaxMs
        self.lateWindowMs = lateWindowMs
        self.filter = filter
        self.dnsPorts = dnsPorts
        self.encodedLabelMin = encodedLabelMin
    }
}

/// One capture file read: its format, link type and records, and where reading stopped if it did.
public struct TraceFile: Codable, Sendable, Hashable {
    public var path: String
    public var format: String?
    public var linkType: String?
    public var records: Int
    /// Set when the file could not be read to its end: what and where. Records before it are analysed.
    public var error: String?
    public var errorOffset: Int?

    public init(path: String, format: String?, linkType: String?, records: Int, error: String? = nil, errorOffset: Int? = nil) {
        self.path = path
        self.format = format
        self.linkType = linkType
        self.records = records
        self.error = error
        self.errorOffset = errorOffset
    }
}

/// What the records of every file decoded to.
public struct TracePackets: Codable, Sendable, Hashable {
    /// Records read from the files (after `--filter`).
    public var total: Int
    /// Records that decoded to UDP or TCP.
    public var decoded: Int
    /// Records that did not, by reason (link, IP, fragments, transport), and DNS payloads that did not parse.
    public var undecoded: [String: Int]
    /// DNS messages analysed (UDP datagrams and messages taken out of TCP streams).
    public var dns: Int
    /// UDP/TCP packets on other ports than `dnsPorts`.
    public var notDNS: Int
    /// TCP segments on DNS ports that arrived out of order or after a gap (their stream is dropped).
    public var tcpSegmentsSkipped: Int

    public init(total: Int, decoded: Int, undecoded: [String: Int], dns: Int, notDNS: Int, tcpSegmentsSkipped: Int) {
        self.total = total
        self.decoded = decoded
        self.undecoded = undecoded
        self.dns = dns
        self.notDNS = notDNS
        self.tcpSegmentsSkipped = tcpSegmentsSkipped
    }
}

/// A domain seen in the questions, with the kind of traffic it carries.
public struct TraceDomain: Codable, Sendable, Hashable {
    public var domain: String
    public var queries: Int
    /// `iodine-like`, `txt-tunnel`, `tunnel` or `plain` (see docs/TRACE.md).
    public var kind: String

    public init(domain: String, queries: Int, kind: String) {
        self.domain = domain
        self.queries = queries
        self.kind = kind
    }
}
