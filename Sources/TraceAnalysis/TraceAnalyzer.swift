import Base
public import Capture
import DequeModule
import Foundation
import Histogram
public import Fates
public import Results

/// Matches DNS queries with their responses in captures and aggregates per resolver, per tunnel domain
/// and per record type (docs/TRACE.md): `TraceFrontEnd` turns packets into DNS message events,
/// `TransactionMatcher` matches them. Reading a file runs the two on two threads (TracePipeline);
/// `packet(_:_:)` runs both on the caller's.
public struct TraceAnalyzer {
    public let options: TraceOptions
    private var front: TraceFrontEnd
    private var matcher: TransactionMatcher
    private var order: TimeOrderWindow

    public private(set) var records = 0
    public private(set) var decodedPackets = 0
    public private(set) var undecoded = UndecodedCounts()

    public init(options: TraceOptions = TraceOptions()) {
        self.options = options
        front = TraceFrontEnd(options: options)
        matcher = TransactionMatcher(options: options)
        order = TimeOrderWindow(windowNanos: options.timeOrderWindowNanos, maxEvents: options.timeOrderMaxEvents)
    }

    /// Events that arrived out of time order and were put back in order before matching.
    public var eventsReordered: Int { order.reordered }

    public var dnsMessages: Int { front.dnsMessages }
    public var notDNS: Int { front.notDNS }
    public var dnsUndecoded: [String: Int] { front.dnsUndecoded }

    /// Reads one capture file to its end. A read error (cut or corrupt record) is returned in the file
    /// summary after every record before it has been analysed; opening errors are thrown.
    public mutating func read(path: String, stop: () -> Bool = { false }) throws(CaptureError) -> TraceFile {
        let reader = try CaptureFileReader(path: path, filter: options.filter)
        // Reading, decoding and the front end on a second thread; the time-order window and matching on
        // this one (TracePipeline). The window keeps the events it holds in the pipeline's batches.
        let pipeline = TracePipeline(reader: reader, front: self.front, held: order.lentBatches)
        let (decoder, failure, front) = pipeline.run(stop: stop) { batch in
            self.order.push(lent: batch, to: &self.matcher)
        }
        self.front = front
        records += reader.records
        decodedPackets += decoder.decoded
        undecoded.add(decoder.undecoded)
        return TraceFile(path: path, format: reader.format, linkType: reader.linkTypeDescription,
                                records: reader.records, error: failure?.reason, errorOffset: failure?.offset)
    }

    /// One decoded packet (also the entry point for live capture and tests). Takes the front end's full
    /// grouping path for every query, none of the pipeline's shortcuts.
    public mutating func packet(_ header: PacketHeader, _ payload: UnsafeRawBufferPointer) {
        front.own()
        Self.packet(header, payload, front: &front, order: &order, matcher: &matcher)
    }

    private static func packet(
        _ header: PacketHeader, _ payload: UnsafeRawBufferPointer, front: inout TraceFrontEnd, order: inout TimeOrderWindow,
        matcher: inout TransactionMatcher
    ) {
        front.packet(header, payload, knownDomains: false) { order.push($0, to: &matcher) }
    }

    // MARK: - Results

    /// Ends the analysis: every query still waiting is lost (no response by the end of the capture).
    public mutating func finish() {
        order.drain(to: &matcher)
        matcher.finish()
    }

    /// The memory the matcher holds right now (transactions pending, recently answered, recently lost).
    public var openTransactions: Int { matcher.openTransactions }

    public func result(files: [TraceFile]) -> TraceResult {
        var undecodedAll = undecoded.byReason
        for (reason, count) in front.dnsUndecoded { undecodedAll[reason, default: 0] += count }
        undecodedAll["tcpSegmentsSkipped"] = nil
        if front.snapCutUnscanned > 0 { undecodedAll[UndecodedReason.snapTruncated.rawValue, default: 0] += front.snapCutUnscanned }
        let packets = TracePackets(total: records, decoded: decodedPackets, undecoded: undecodedAll,
                                          dns: front.dnsMessages, notDNS: front.notDNS, tcpSegmentsSkipped: front.streams.skipped)
        var total = TraceMetrics()
        var resolvers: [TraceStats] = []
        let groupKeys = matcher.groupKeys, groupMetrics = matcher.groupMetrics, domains = front.domains
        let resolverNames = front.resolverNames
        let resolverMetrics = matcher.resolverTotals(count: resolverNames.count)
        let domainQueries = matcher.domainQueries(count: domains.names.count)
        for (i, endpoint) in resolverNames.enumerated() {
            let m = resolverMetrics[i]
            total.merge(m)
            var stats = TraceStatsBuilder.stats(m)
            stats.resolver = endpoint.description
            stats.groups = groupKeys.indices.filter { groupKeys[$0].resolver == Int32(i) }.map { g in
                var s = TraceStatsBuilder.stats(groupMetrics[g])
                s.domain = domains.names[Int(groupKeys[g].domain)]
                s.recordType = TraceStatsBuilder.typeName(groupKeys[g].qtype)
                return s
            }
            resolvers.append(stats)
        }
        let domainList = domains.names.indices.map { d in
            TraceDomain(domain: domains.names[d], queries: domainQueries[d].all,
                               kind: TraceStatsBuilder.kind(isTunnel: domains.isTunnel[d], queries: domainQueries[d].all,
                                                           nullQueries: domainQueries[d].null, txtQueries: domainQueries[d].txt))
        }
        let settings = TraceSettings(
            tmaxMs: Double(options.tmaxNanos) / 1e6, lateWindowMs: Double(options.lateWindowNanos) / 1e6,
            filter: options.filter, dnsPorts: options.dnsPorts.sorted().map(Int.init), encodedLabelMin: options.encodedLabelMin)
        return TraceResult(settings: settings, files: files, packets: packets, totals: TraceStatsBuilder.stats(total),
                           resolvers: resolvers, domains: domainList)
    }

    /// The per-query fates of the capture, one `roundTrip` stream per resolver and tunnel domain.
    public func fateTrace(source: FateTrace.Source) -> FateTrace {
        matcher.fates.trace(source: source, resolvers: front.resolverNames.map(\.description), domains: front.domains.names)
    }
}
