public import Base

/// `path.json` (schema `tunnelprobe.path/2`; version 2 writes unmeasured delay figures as null in the shared `Percentiles`, version 1 files still load): per resolver, what the path did to a paced stream of
/// sequenced probes, upstream and downstream apart.
public struct PathReport: Codable, Sendable, Hashable {
    public static let schemaName = "tunnelprobe.path/2"

    public var schema: String = PathReport.schemaName
    public var run: RunInfo
    public var settings: Settings
    public var conventions: Conventions
    public var client: ClientChecks
    public var resolvers: [ResolverResult]
    /// The resolvers asked over TCP, TLS or HTTPS (`StreamPath`): RTT, rates, timeouts and
    /// connections, no per-direction loss (not observable over a stream). Absent when there were none.
    public var streamResolvers: [StreamPathResult]?

    public init(run: RunInfo, settings: Settings, conventions: Conventions = Conventions(),
                client: ClientChecks = ClientChecks(udpReceiveBufferErrors: nil), resolvers: [ResolverResult],
                streamResolvers: [StreamPathResult]? = nil) {
        self.run = run
        self.settings = settings
        self.conventions = conventions
        self.client = client
        self.resolvers = resolvers
        self.streamResolvers = streamResolvers
    }

    /// Whether the measuring host itself dropped datagrams: that would pass for downstream loss.
    public struct ClientChecks: Codable, Sendable, Hashable {
        /// Growth of the kernel's UDP RcvbufErrors counter (this network namespace) during the run.
        @NullCoded public var udpReceiveBufferErrors: Int?
        @NullCoded public var reason: String?

        public init(udpReceiveBufferErrors: Int?) {
            self.udpReceiveBufferErrors = udpReceiveBufferErrors
            reason = udpReceiveBufferErrors == nil ? "/proc/net/snmp not readable" : nil
        }
    }

    public struct Settings: Codable, Sendable, Hashable {
        public var domain: String
        /// Probes per second to each resolver.
        public var rate: Double
        public var count: Int
        @NullCoded public var durationSeconds: Double?
        /// Query name payload characters (meta block included).
        public var uploadCharacters: Int
        /// Response payload bytes asked for (the receive history is sent even when this is smaller).
        public var downloadBytes: Int
        public var recordType: String
        public var tmaxMs: Double
        /// Whether client and responder share a clock (`--shared-clock`): one-way delays only then.
        public var sharedClock: Bool

        public init(domain: String, rate: Double, count: Int, durationSeconds: Double?, uploadCharacters: Int,
                    downloadBytes: Int, recordType: String, tmaxMs: Double, sharedClock: Bool) {
            self.domain = domain
            self.rate = rate
            self.count = count
            self.durationSeconds = durationSeconds
            self.uploadCharacters = uploadCharacters
            self.downloadBytes = downloadBytes
            self.recordType = recordType
            self.tmaxMs = tmaxMs
            self.sharedClock = sharedClock
        }
    }

    /// The definitions the numbers follow, written into every report.
    public struct Conventions: Codable, Sendable, Hashable {
        public var loss = "RFC 7680: lost = no response within tmax; a late response is lost and also counted as late. up = the responder never saw the query; down = it saw the query, no response arrived in time; unknown = no receive history covered the probe (excluded from up and down samples)"
        public var gilbertH = GilbertFit.hConvention
        public var gilbertDirection = "gilbert.p/r/h are fitted to the round-trip loss trace; gilbertByDirection has up and down"
        public var reordering = "RFC 4737: reordering.ratio/maxExtent are round trip (send order vs response arrival order); up compares send order with the responder's receive order, down the responder's receive order with the client's arrival order"
        public var intervals = "Wilson score 95 % interval"
        public init() {}
    }

    public struct Gilbert: Codable, Sendable, Hashable {
        @NullCoded public var p: Double?
        @NullCoded public var r: Double?
        @NullCoded public var h: Double?
        /// "gilbert" (3 parameters fitted), "twoState" (h = 0 by assumption: the 3-parameter fit fell outside the model), nil.
        @NullCoded public var model: String?
        @NullCoded public var reason: String?
        public var roundTrip: GilbertFit

        public init(_ fit: GilbertFit) {
            roundTrip = fit
            if let g = fit.withH {
                (p, r, h, model) = (g.p, g.r, g.h, "gilbert")
            } else if let t = fit.twoState {
                (p, r, h, model) = (t.p, t.r, 0, "twoState")
                reason = fit.withHReason.map { "3-parameter fit: \($0); p and r from the 2-state model (h = 0)" }
            } else {
                reason = fit.twoStateReason
            }
        }
    }

    public struct ReorderingSummary: Codable, Sendable, Hashable {
        @NullCoded public var ratio: Double?
        @NullCoded public var maxExtent: Int?
        public var threeReordered: Int
        public var samples: Int
        @NullCoded public var reason: String?
        public var roundTrip: Reordering
        public var up: Reordering
        public var down: Reordering

        public init(_ all: PathAnalysis.PerDirection<Reordering>) {
            let rt = all.roundTrip
            ratio = rt.ratio.ratio
            maxExtent = rt.maxExtent
            threeReordered = rt.threeReordered
            samples = rt.samples
            reason = rt.reason
            roundTrip = rt
            up = all.up
            down = all.down
        }
    }

    public struct Stream: Codable, Sendable, Hashable {
        public var id: UInt32
        public var elapsedSeconds: Double
        /// Probes sent per second, as achieved.
        @NullCoded public var achievedRate: Double?
        public var drainsSent: Int
        public var drainsAnswered: Int
        /// Datagrams that matched no probe of the stream.
        public var unmatched: Int
        public var responderAbsent: Bool
        /// Probes left out because the run stopped before their tmax ran out.
        public var inFlightExcluded: Int
        /// Datagrams the kernel dropped at the client's own socket (nil: not readable). Above 0, some
        /// down loss happened on the measuring host itself.
        @NullCoded public var clientSocketDrops: Int?
        /// Query datagrams written (probes and drains) and every datagram read back: what a capture of
        /// the stream counts (`--capture`).
        public var datagramsSent: Int?
        public var datagramsReceived: Int?

        public init(id: UInt32, elapsedSeconds: Double, achievedRate: Double?, drainsSent: Int, drainsAnswered: Int,
                    unmatched: Int, responderAbsent: Bool, inFlightExcluded: Int, clientSocketDrops: Int? = nil,
                    datagramsSent: Int? = nil, datagramsReceived: Int? = nil) {
            self.datagramsSent = datagramsSent
            self.datagramsReceived = datagramsReceived
            self.id = id
            self.elapsedSeconds = elapsedSeconds
            self.achievedRate = achievedRate
            self.drainsSent = drainsSent
            self.drainsAnswered = drainsAnswered
            self.unmatched = unmatched
            self.responderAbsent = responderAbsent
            self.inFlightExcluded = inFlightExcluded
            self.clientSocketDrops = clientSocketDrops
        }
    }

    public struct ResolverResult: Codable, Sendable, Hashable {
        public var resolver: String
        public var stream: Stream
        public var counts: PathAnalysis.Counts
        public var loss: PathAnalysis.PerDirection<Proportion>
        public var lossPatterns: PathAnalysis.PerDirection<LossPattern>
        public var gilbert: Gilbert
        public var gilbertByDirection: PathAnalysis.PerDirection<GilbertFit>
        public var reordering: ReorderingSummary
        public var duplicates: PathAnalysis.Duplicates
        public var rttMs: Percentiles
        @NullCoded public var jitterMs: Double?
        @NullCoded public var jitterReason: String?
        public var ipdvMs: DelayVariation
        @NullCoded public var oneWayMs: PathAnalysis.OneWay?
        /// Loss per slice of send time, with the longest burst of each slice.
        public var timeline: LossTimeline?

        public init(resolver: String, stream: Stream, analysis a: PathAnalysis) {
            self.resolver = resolver
            self.stream = stream
            counts = a.counts
            loss = a.loss
            lossPatterns = a.lossPatterns
            gilbert = Gilbert(a.gilbert.roundTrip)
            gilbertByDirection = a.gilbert
            reordering = ReorderingSummary(a.reordering)
            duplicates = a.duplicates
            rttMs = a.rtt
            jitterMs = a.jitter.milliseconds
            jitterReason = a.jitter.reason
            ipdvMs = a.ipdv
            oneWayMs = a.oneWay
            timeline = a.timeline
        }
    }
}






