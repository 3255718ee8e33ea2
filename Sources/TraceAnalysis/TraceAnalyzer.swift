public import Capture
import DequeModule
import Foundation
import Histogram
public import Reports

/// Matches DNS queries with their responses in captures and aggregates per resolver, per tunnel domain
/// and per record type (docs/TRACE.md).
///
/// A transaction is (client address and port, resolver address and port, DNS id, question name
/// case-folded, type). A query whose transaction is still pending is a retransmission: it joins the
/// first query, whose send time the RTT is measured from (as tshark's `dns.time`). The first response
/// within Tmax answers it; later ones are duplicates. After Tmax the transaction is lost (RFC 7680) and
/// moves to a table of recent losses, so a response up to `lateWindow` later is counted late.
///
/// Memory: completed transactions leave the pending table; answered ones stay only for Tmax (to
/// recognise duplicates) and lost ones for the late window; aggregates are histograms. Memory follows
/// the query rate times Tmax, never the number of answered queries.
public final class TraceAnalyzer {
    public let options: TraceOptions

    private struct TransactionKey: Hashable {
        var client: IPAddress
        var clientPort: UInt16
        var id: UInt16
        var resolver: Int32
        var qtype: UInt16
        var name: UInt64
    }

    private struct Open {
        var serial: UInt64
        var sent: Int64
        var group: Int32
        var resolverSequence: UInt32
        var groupSequence: UInt32
        var fate: Int32
    }

    private struct Expiry {
        var key: TransactionKey
        var serial: UInt64
        var at: Int64
    }

    private struct Endpoint: Hashable {
        var address: IPAddress
        var port: UInt16
    }

    private var pending: [TransactionKey: Open] = [:]
    private var pendingQueue = Deque<Expiry>()
    private var answered: [TransactionKey: Open] = [:]
    private var answeredQueue = Deque<Expiry>()
    private var lostRecently: [TransactionKey: Open] = [:]
    private var lostQueue = Deque<Expiry>()
    private var serial: UInt64 = 0
    private var now: Int64 = .min

    private var resolverIndex: [Endpoint: Int32] = [:]
    private var resolverNames: [Endpoint] = []
    private var resolverMetrics: [TraceMetrics] = []
    private var groupIndex: [UInt64: Int32] = [:]
    private var groupKeys: [(resolver: Int32, domain: Int32, qtype: UInt16)] = []
    private var groupMetrics: [TraceMetrics] = []
    private var domains: TunnelDomains
    private var domainQueries: [Int] = []
    private var domainTypes: [[UInt16: Int]] = []
    private var lastEndpoint: Endpoint?
    private var lastResolver: Int32 = 0

    private var streams = TCPStreams()
    private(set) var fates = FateRecorder()

    public private(set) var records = 0
    public private(set) var decodedPackets = 0
    public private(set) var undecoded = UndecodedCounts()
    public private(set) var dnsMessages = 0
    public private(set) var notDNS = 0
    public private(set) var dnsUndecoded: [String: Int] = [:]

    // Scratch buffers for the question scan, allocated once.
    private let nameBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256, alignment: 8)
    private let suffixHashes = UnsafeMutableBufferPointer<UInt64>.allocate(capacity: DNSQuestionScan.maxLabels + 1)
    private let labelStarts = UnsafeMutableBufferPointer<Int>.allocate(capacity: DNSQuestionScan.maxLabels + 1)

    public init(options: TraceOptions = TraceOptions()) {
        self.options = options
        domains = TunnelDomains(encodedLabelMin: options.encodedLabelMin, maxDomains: options.maxDomains)
        nameBuffer.initializeMemory(as: UInt8.self, repeating: 0)
    }

    deinit {
        nameBuffer.deallocate()
        suffixHashes.deallocate()
        labelStarts.deallocate()
    }

    /// Reads one capture file to its end. A read error (cut or corrupt record) is returned in the file
    /// summary after every record before it has been analysed; opening errors are thrown.
    public func read(path: String, stop: () -> Bool = { false }) throws(CaptureError) -> TraceReport.File {
        let reader = try CaptureFileReader(path: path, filter: options.filter)
        var decoder = PacketDecoder(linkType: reader.linkType)
        var failure: CaptureError?
        do {
            try reader.forEachFrame(stop: stop) { frame, wireLength, time in
                decoder.decode(frame, wireLength: wireLength, timestampNanos: time) { header, payload in
                    self.packet(header, payload)
                }
            }
        } catch {
            failure = error
        }
        decoder.finish()
        records += reader.records
        decodedPackets += decoder.decoded
        undecoded.add(decoder.undecoded)
        return TraceReport.File(path: path, format: reader.format, linkType: reader.linkType.description,
                                records: reader.records, error: failure?.reason, errorOffset: failure?.offset)
    }

    /// One decoded packet (also the entry point for live capture and tests).
    public func packet(_ header: PacketHeader, _ payload: UnsafeRawBufferPointer) {
        guard options.dnsPorts.contains(header.sourcePort) || options.dnsPorts.contains(header.destinationPort) else {
            notDNS += 1
            return
        }
        if header.timestampNanos > now {
            now = header.timestampNanos
            expire()
        }
        switch header.transport {
        case .udp:
            message(header, payload)
        case .tcp:
            streams.segment(header, payload) { message in self.message(header, message) }
        }
    }

    // MARK: - Transactions

    private func message(_ header: PacketHeader, _ bytes: UnsafeRawBufferPointer) {
        var scan = DNSQuestionScan()
        if let failure = DNSQuestionScan.scan(bytes, name: nameBuffer, suffixHashes: suffixHashes,
                                             labelStarts: labelStarts, into: &scan) {
            dnsUndecoded[failure.rawValue, default: 0] += 1
            return
        }
        dnsMessages += 1
        let time = header.timestampNanos
        if !scan.isResponse {
            query(header, scan, size: bytes.count, time: time)
        } else {
            response(header, scan, size: bytes.count, time: time)
        }
    }

    private func resolver(_ endpoint: Endpoint) -> Int32 {
        if endpoint == lastEndpoint { return lastResolver }
        let index: Int32
        if let known = resolverIndex[endpoint] {
            index = known
        } else if resolverNames.count < options.maxResolvers {
            index = Int32(resolverNames.count)
            resolverIndex[endpoint] = index
            resolverNames.append(endpoint)
            resolverMetrics.append(TraceMetrics())
        } else {
            index = Int32(options.maxResolvers - 1)  // the last one absorbs the rest; the report says so
        }
        lastEndpoint = endpoint
        lastResolver = index
        return index
    }

    private func group(resolver: Int32, domain: Int32, qtype: UInt16) -> Int32 {
        let packed = UInt64(UInt32(bitPattern: resolver)) << 32 | UInt64(UInt16(truncatingIfNeeded: domain)) << 16 | UInt64(qtype)
        if let known = groupIndex[packed] { return known }
        guard groupKeys.count < options.maxGroups else { return Int32(options.maxGroups - 1) }
        let index = Int32(groupKeys.count)
        groupIndex[packed] = index
        groupKeys.append((resolver, domain, qtype))
        groupMetrics.append(TraceMetrics())
        return index
    }

    private func query(_ header: PacketHeader, _ scan: DNSQuestionScan, size: Int, time: Int64) {
        let r = resolver(Endpoint(address: header.destination, port: header.destinationPort))
        let key = TransactionKey(client: header.source, clientPort: header.sourcePort, id: scan.id, resolver: r,
                                 qtype: scan.qtype, name: scan.nameHash)
        if let open = pending[key] {
            resolverMetrics[Int(r)].retransmissions += 1
            groupMetrics[Int(open.group)].retransmissions += 1
            return
        }
        let d = domains.domain(scan: scan, name: nameBuffer, suffixHashes: suffixHashes, labelStarts: labelStarts)
        if Int(d) >= domainQueries.count {
            domainQueries.append(0)
            domainTypes.append([:])
        }
        domainQueries[Int(d)] += 1
        domainTypes[Int(d)][scan.qtype, default: 0] += 1
        let g = group(resolver: r, domain: d, qtype: scan.qtype)
        serial += 1
        let fate = options.recordFates ? fates.query(resolver: r, domain: d, sent: time, size: size) : -1
        let open = Open(serial: serial, sent: time, group: g,
                        resolverSequence: resolverMetrics[Int(r)].takeSequence(),
                        groupSequence: groupMetrics[Int(g)].takeSequence(), fate: fate)
        pending[key] = open
        pendingQueue.append(Expiry(key: key, serial: serial, at: time))
        resolverMetrics[Int(r)].queries += 1
        resolverMetrics[Int(r)].querySizes.record(size)
        groupMetrics[Int(g)].queries += 1
        groupMetrics[Int(g)].querySizes.record(size)
    }

    private func response(_ header: PacketHeader, _ scan: DNSQuestionScan, size: Int, time: Int64) {
        let r = resolver(Endpoint(address: header.source, port: header.sourcePort))
        let key = TransactionKey(client: header.destination, clientPort: header.destinationPort, id: scan.id, resolver: r,
                                 qtype: scan.qtype, name: scan.nameHash)
        if let open = pending.removeValue(forKey: key) {
            let rtt = time - open.sent
            update(r, open.group) { m in
                m.answered += 1
                m.recordRTT(nanoseconds: rtt)
                m.responseSizes.record(size)
                m.rcodes[Int(scan.rcode)] += 1
                if scan.truncated { m.truncated += 1 }
            }
            resolverMetrics[Int(r)].arrival(sequence: open.resolverSequence)
            groupMetrics[Int(open.group)].arrival(sequence: open.groupSequence)
            if open.fate >= 0 { fates.delivered(open.fate, delay: rtt) }
            answered[key] = open
            answeredQueue.append(Expiry(key: key, serial: open.serial, at: time))
        } else if let open = answered[key] {
            update(r, open.group) { $0.duplicates += 1 }
            if open.fate >= 0 { fates.copy(open.fate) }
        } else if let open = lostRecently.removeValue(forKey: key) {
            update(r, open.group) { m in
                m.late += 1
                m.responseSizes.record(size)
                m.rcodes[Int(scan.rcode)] += 1
                if scan.truncated { m.truncated += 1 }
            }
            resolverMetrics[Int(r)].arrival(sequence: open.resolverSequence)
            groupMetrics[Int(open.group)].arrival(sequence: open.groupSequence)
        } else {
            resolverMetrics[Int(r)].unmatchedResponses += 1
        }
    }

    @inline(__always) private func update(_ r: Int32, _ g: Int32, _ change: (inout TraceMetrics) -> Void) {
        change(&resolverMetrics[Int(r)])
        change(&groupMetrics[Int(g)])
    }

    /// Moves transactions past Tmax to the lost table, and forgets answered and lost ones past their windows.
    private func expire(upTo limit: Int64? = nil) {
        let t = limit ?? now
        while let head = pendingQueue.first, limit == .max || head.at + options.tmaxNanos < t {
            pendingQueue.removeFirst()
            guard let open = pending[head.key], open.serial == head.serial else { continue }
            pending[head.key] = nil
            loss(open)
            if limit != .max {
                lostRecently[head.key] = open
                lostQueue.append(Expiry(key: head.key, serial: open.serial, at: head.at + options.tmaxNanos))
            }
        }
        while let head = answeredQueue.first, limit == .max || head.at + options.tmaxNanos < t {
            answeredQueue.removeFirst()
            if answered[head.key]?.serial == head.serial { answered[head.key] = nil }
        }
        while let head = lostQueue.first, limit == .max || head.at + options.lateWindowNanos < t {
            lostQueue.removeFirst()
            if lostRecently[head.key]?.serial == head.serial { lostRecently[head.key] = nil }
        }
    }

    private func loss(_ open: Open) {
        let r = groupKeys[Int(open.group)].resolver
        update(r, open.group) { $0.lost += 1 }
    }

    // MARK: - Results

    /// Ends the analysis: every query still waiting is lost (no response by the end of the capture).
    public func finish() {
        expire(upTo: .max)
        answered.removeAll()
        lostRecently.removeAll()
    }

    /// The memory the matcher holds right now (transactions pending, recently answered, recently lost).
    public var openTransactions: Int { pending.count + answered.count + lostRecently.count }

    public func report(run: RunInfo, files: [TraceReport.File]) -> TraceReport {
        var undecodedAll = undecoded.byReason
        for (reason, count) in dnsUndecoded { undecodedAll[reason, default: 0] += count }
        undecodedAll["tcpSegmentsSkipped"] = nil
        let packets = TraceReport.Packets(total: records, decoded: decodedPackets, undecoded: undecodedAll,
                                          dns: dnsMessages, notDNS: notDNS, tcpSegmentsSkipped: streams.skipped)
        var total = TraceMetrics()
        var resolvers: [TraceStats] = []
        for (i, endpoint) in resolverNames.enumerated() {
            let m = resolverMetrics[i]
            total.merge(m)
            var stats = TraceStatsBuilder.stats(m)
            stats.resolver = Self.endpointText(endpoint)
            stats.groups = groupKeys.indices.filter { groupKeys[$0].resolver == Int32(i) }.map { g in
                var s = TraceStatsBuilder.stats(groupMetrics[g])
                s.domain = domains.names[Int(groupKeys[g].domain)]
                s.recordType = TraceStatsBuilder.typeName(groupKeys[g].qtype)
                return s
            }
            resolvers.append(stats)
        }
        let domainList = domains.names.indices.map { d in
            TraceReport.Domain(domain: domains.names[d], queries: d < domainQueries.count ? domainQueries[d] : 0,
                               kind: TraceStatsBuilder.kind(isTunnel: domains.isTunnel[d], types: d < domainTypes.count ? domainTypes[d] : [:]))
        }
        let settings = TraceReport.Settings(
            tmaxMs: Double(options.tmaxNanos) / 1e6, lateWindowMs: Double(options.lateWindowNanos) / 1e6,
            filter: options.filter, dnsPorts: options.dnsPorts.sorted().map(Int.init), encodedLabelMin: options.encodedLabelMin)
        return TraceReport(run: run, settings: settings, files: files, packets: packets, totals: TraceStatsBuilder.stats(total),
                           resolvers: resolvers, domains: domainList)
    }

    /// The per-query fates of the capture, one `roundTrip` stream per resolver and tunnel domain.
    public func fateTrace(source: FateTrace.Source) -> FateTrace {
        fates.trace(source: source, resolvers: resolverNames.map(Self.endpointText), domains: domains.names)
    }

    private static func endpointText(_ e: Endpoint) -> String {
        e.address.version == 6 ? "[\(e.address)]:\(e.port)" : "\(e.address):\(e.port)"
    }
}
