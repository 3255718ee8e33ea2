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
/// within Tmax answers it; later ones up to Tmax after the query are duplicates. After Tmax a pending
/// transaction is lost (RFC 7680) and moves to a table of recent losses, so a response up to
/// `lateWindow` later is counted late.
///
/// Memory: transactions live in a send-order ring until Tmax after their query, lost ones until the end
/// of their late window; aggregates are histograms. Memory follows the query rate times Tmax, never
/// the number of answered queries.
public struct TraceAnalyzer {
    public let options: TraceOptions

    private struct LostExpiry {
        var at: Int64
        var key: TransactionKey
        var serial: UInt64
    }

    private struct Endpoint: Hashable {
        var address: IPAddress
        var port: UInt16

        /// A cheap 64-bit hash for the resolver index.
        var hash64: UInt64 {
            switch address {
            case .v4(let a): DNSQuestionScan.mix(UInt64(a) << 16 | UInt64(port), 4)
            case .v6(let hi, let lo): DNSQuestionScan.mix(DNSQuestionScan.mix(hi, lo), UInt64(port))
            }
        }
    }

    private var window = TransactionWindow()
    /// Lost transactions in their late window, and the order in which that window ends.
    private var lost: [TransactionKey: Transaction] = [:]
    private var lostQueue = Deque<LostExpiry>()
    /// `options.dnsPorts` as a bitmap: two lookups per packet.
    private var dnsPortBits = [UInt64](repeating: 0, count: 1024)
    private var now: Int64 = .min

    private var resolverIndex = HashIndex()
    private var resolverNames: [Endpoint] = []
    private var resolverMetrics: [TraceMetrics] = []
    private var groupIndex = HashIndex(capacity: 64)
    private var groupKeys: [(resolver: Int32, domain: Int32, qtype: UInt16)] = []
    private var groupMetrics: [TraceMetrics] = []
    private var domains: TunnelDomains
    private var domainQueries: [Int] = []
    /// Per domain: queries for NULL or PRIVATE (iodine), and for TXT; what `kind` needs.
    private var domainNullQueries: [Int] = []
    private var domainTXTQueries: [Int] = []
    private var lastGroupKey: UInt64 = .max
    private var lastGroup: Int32 = 0
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
    private let scratch = QuestionScratch()
    private var nameBuffer: UnsafeMutableRawBufferPointer { scratch.name }
    private var suffixHashes: UnsafeMutableBufferPointer<UInt64> { scratch.suffixHashes }
    private var labelStarts: UnsafeMutableBufferPointer<Int> { scratch.labelStarts }

    public init(options: TraceOptions = TraceOptions()) {
        self.options = options
        domains = TunnelDomains(encodedLabelMin: options.encodedLabelMin, maxDomains: options.maxDomains)
        for port in options.dnsPorts { dnsPortBits[Int(port) >> 6] |= 1 << UInt64(port & 63) }
    }

    @inline(__always) private func isDNSPort(_ port: UInt16) -> Bool {
        dnsPortBits[Int(port) >> 6] & (1 << UInt64(port & 63)) != 0
    }

    /// Reads one capture file to its end. A read error (cut or corrupt record) is returned in the file
    /// summary after every record before it has been analysed; opening errors are thrown.
    public mutating func read(path: String, stop: () -> Bool = { false }) throws(CaptureError) -> TraceReport.File {
        let reader = try CaptureFileReader(path: path, filter: options.filter)
        // Reading and decoding on a second thread, matching on this one (DecodingPipeline).
        let pipeline = TracePipeline(reader: reader, options: options)
        let (decoder, failure) = pipeline.run(stop: stop) { header, payload, outcome, scan in
            self.packet(header, payload, prescanned: outcome, scan)
        }
        records += reader.records
        decodedPackets += decoder.decoded
        undecoded.add(decoder.undecoded)
        return TraceReport.File(path: path, format: reader.format, linkType: reader.linkType.description,
                                records: reader.records, error: failure?.reason, errorOffset: failure?.offset)
    }

    /// One decoded packet (also the entry point for live capture and tests).
    public mutating func packet(_ header: PacketHeader, _ payload: UnsafeRawBufferPointer) {
        packet(header, payload, prescanned: 0, DNSQuestionScan())
    }

    /// One decoded packet with the question scan TracePipeline did on its thread (`prescanned`: 0 none,
    /// 1 `scan` holds it, 2 + index of the DNSQuestionScan.Failure).
    mutating func packet(_ header: PacketHeader, _ payload: UnsafeRawBufferPointer, prescanned: UInt8, _ scan: DNSQuestionScan) {
        guard isDNSPort(header.sourcePort) || isDNSPort(header.destinationPort) else {
            notDNS += 1
            return
        }
        if header.timestampNanos > now {
            now = header.timestampNanos
            expire()
        }
        switch header.transport {
        case .udp:
            if prescanned == 0 {
                message(header, payload)
            } else if prescanned == 1 {
                matched(header, scan, payload, nameScanned: false)
            } else {
                dnsUndecoded[DNSQuestionScan.Failure.allCases[Int(prescanned) - 2].rawValue, default: 0] += 1
            }
        case .tcp:
            // DNS over TCP is rare next to UDP: the messages a segment completes are copied out.
            var messages: [[UInt8]] = []
            streams.segment(header, payload) { messages.append(Array($0)) }
            for m in messages { m.withUnsafeBytes { message(header, $0) } }
        }
    }

    // MARK: - Transactions

    private mutating func message(_ header: PacketHeader, _ bytes: UnsafeRawBufferPointer) {
        var scan = DNSQuestionScan()
        if let failure = DNSQuestionScan.scan(bytes, name: nameBuffer, suffixHashes: suffixHashes,
                                             labelStarts: labelStarts, into: &scan) {
            dnsUndecoded[failure.rawValue, default: 0] += 1
            return
        }
        matched(header, scan, bytes, nameScanned: true)
    }

    /// A scanned DNS message; `nameScanned`: the scratch buffers hold its name (else only `scan` does).
    private mutating func matched(_ header: PacketHeader, _ scan: DNSQuestionScan, _ bytes: UnsafeRawBufferPointer, nameScanned: Bool) {
        dnsMessages += 1
        let time = header.timestampNanos
        if !scan.isResponse {
            query(header, scan, bytes, nameScanned: nameScanned, time: time)
        } else {
            response(header, scan, size: bytes.count, time: time)
        }
    }

    private mutating func resolver(_ endpoint: Endpoint) -> Int32 {
        if endpoint == lastEndpoint { return lastResolver }
        let index: Int32
        let hash = endpoint.hash64
        if let known = resolverIndex.find(hash, where: { resolverNames[Int($0)] == endpoint }) {
            index = known
        } else if resolverNames.count < options.maxResolvers {
            index = Int32(resolverNames.count)
            resolverIndex.insert(hash, index)
            resolverNames.append(endpoint)
            resolverMetrics.append(TraceMetrics())
        } else {
            index = Int32(options.maxResolvers - 1)  // the last one absorbs the rest (docs/TRACE.md, "Memory")
        }
        lastEndpoint = endpoint
        lastResolver = index
        return index
    }

    private mutating func group(resolver: Int32, domain: Int32, qtype: UInt16) -> Int32 {
        let packed = UInt64(UInt32(bitPattern: resolver)) << 32 | UInt64(UInt16(truncatingIfNeeded: domain)) << 16 | UInt64(qtype)
        if packed == lastGroupKey { return lastGroup }
        if let known = groupIndex.find(packed) {
            lastGroupKey = packed
            lastGroup = known
            return known
        }
        guard groupKeys.count < options.maxGroups else { return Int32(options.maxGroups - 1) }
        let index = Int32(groupKeys.count)
        groupIndex.insert(packed, index)
        groupKeys.append((resolver, domain, qtype))
        groupMetrics.append(TraceMetrics())
        return index
    }

    private mutating func query(
        _ header: PacketHeader, _ scan: DNSQuestionScan, _ bytes: UnsafeRawBufferPointer, nameScanned: Bool, time: Int64
    ) {
        let size = bytes.count
        let r = resolver(Endpoint(address: header.destination, port: header.destinationPort))
        let key = TransactionKey(client: header.source, clientPort: header.sourcePort, id: scan.id, resolver: r,
                                 qtype: scan.qtype, name: scan.nameHash)
        let hash = key.hash
        if let serial = window.find(key, hash: hash) {
            let known = window[serial]
            if known.state == .pending {
                // Same id and question while unanswered: a retransmission joins the first query (as tshark).
                resolverMetrics[Int(r)].retransmissions += 1
                groupMetrics[Int(known.group)].retransmissions += 1
                return
            }
            window.retire(serial)  // the id and question are reused by a new transaction
        }
        let d: Int32
        if !nameScanned, let known = domains.knownDomain(scan) {
            d = known
        } else {
            if !nameScanned {  // a name whose domain is new: scan it again here for its labels
                var again = DNSQuestionScan()
                _ = DNSQuestionScan.scan(bytes, name: nameBuffer, suffixHashes: suffixHashes, labelStarts: labelStarts, into: &again)
            }
            d = domains.domain(scan: scan, name: nameBuffer, suffixHashes: suffixHashes, labelStarts: labelStarts)
        }
        if Int(d) >= domainQueries.count {
            domainQueries.append(0)
            domainNullQueries.append(0)
            domainTXTQueries.append(0)
        }
        domainQueries[Int(d)] += 1
        if scan.qtype == 10 || scan.qtype == 65399 { domainNullQueries[Int(d)] += 1 }
        if scan.qtype == 16 { domainTXTQueries[Int(d)] += 1 }
        let g = group(resolver: r, domain: d, qtype: scan.qtype)
        let serial = window.nextSerial
        let fate = options.recordFates ? fates.query(resolver: r, domain: d, sent: time, size: size) : -1
        let transaction = Transaction(serial: serial, sent: time, group: g,
                                      resolverSequence: resolverMetrics[Int(r)].takeSequence(),
                                      groupSequence: groupMetrics[Int(g)].takeSequence(), fate: fate)
        window.append(key, hash: hash, transaction)
        resolverMetrics[Int(r)].queries += 1
        resolverMetrics[Int(r)].querySizes.record(size)
        groupMetrics[Int(g)].queries += 1
        groupMetrics[Int(g)].querySizes.record(size)
    }

    private mutating func response(_ header: PacketHeader, _ scan: DNSQuestionScan, size: Int, time: Int64) {
        let r = resolver(Endpoint(address: header.source, port: header.sourcePort))
        let key = TransactionKey(client: header.destination, clientPort: header.destinationPort, id: scan.id, resolver: r,
                                 qtype: scan.qtype, name: scan.nameHash)
        if let serial = window.find(key, hash: key.hash) {
            var t = window[serial]
            if t.state == .pending {
                let rtt = time - t.sent
                update(r, t.group) { m in
                    m.answered += 1
                    m.responseSizes.record(size)
                    m.rcodes[Int(scan.rcode)] += 1
                    if scan.truncated { m.truncated += 1 }
                }
                // The RTT goes into the group's histogram only; a resolver's is the sum of its groups' at
                // report time (one HdrHistogram record per response), except for the group that absorbs
                // the overflow of several resolvers (`maxGroups`), recorded in the resolver's own.
                groupMetrics[Int(t.group)].recordRTT(nanoseconds: rtt)
                if Int(t.group) == options.maxGroups - 1 { resolverMetrics[Int(r)].recordRTT(nanoseconds: rtt) }
                resolverMetrics[Int(r)].arrival(sequence: t.resolverSequence)
                groupMetrics[Int(t.group)].arrival(sequence: t.groupSequence)
                if t.fate >= 0 { fates.delivered(t.fate, delay: rtt) }
                t.state = .answered
                window[serial] = t
            } else {
                update(r, t.group) { $0.duplicates += 1 }
                if t.fate >= 0 { fates.copy(t.fate) }
            }
        } else if !lost.isEmpty, var t = lost[key] {
            if t.state == .lost {
                update(r, t.group) { m in
                    m.late += 1
                    m.responseSizes.record(size)
                    m.rcodes[Int(scan.rcode)] += 1
                    if scan.truncated { m.truncated += 1 }
                }
                resolverMetrics[Int(r)].arrival(sequence: t.resolverSequence)
                groupMetrics[Int(t.group)].arrival(sequence: t.groupSequence)
                t.state = .late
                lost[key] = t
            } else {
                update(r, t.group) { $0.duplicates += 1 }
            }
        } else {
            resolverMetrics[Int(r)].unmatchedResponses += 1
        }
    }

    @inline(__always) private mutating func update(_ r: Int32, _ g: Int32, _ change: (inout TraceMetrics) -> Void) {
        change(&resolverMetrics[Int(r)])
        change(&groupMetrics[Int(g)])
    }

    /// Ends the Tmax window of transactions sent more than Tmax ago (pending ones are lost, RFC 7680;
    /// answered ones are forgotten, so a duplicate is recognised until Tmax after its query), and the
    /// late window of lost ones.
    private mutating func expire(final: Bool = false) {
        while let head = window.oldest, final || head.transaction.sent + options.tmaxNanos < now {
            guard let entry = window.removeOldest() else { break }
            var t = entry.transaction
            guard t.state == .pending else { continue }
            loss(t)
            if !final, entry.indexed {
                t.state = .lost
                lost[entry.key] = t
                lostQueue.append(LostExpiry(at: t.sent + options.tmaxNanos, key: entry.key, serial: t.serial))
            }
        }
        while let head = lostQueue.first, final || head.at + options.lateWindowNanos < now {
            lostQueue.removeFirst()
            if lost[head.key]?.serial == head.serial { lost[head.key] = nil }
        }
    }

    private mutating func loss(_ t: Transaction) {
        let r = groupKeys[Int(t.group)].resolver
        update(r, t.group) { $0.lost += 1 }
    }

    // MARK: - Results

    /// Ends the analysis: every query still waiting is lost (no response by the end of the capture).
    public mutating func finish() {
        expire(final: true)
    }

    /// The memory the matcher holds right now (transactions pending, recently answered, recently lost).
    public var openTransactions: Int { window.count + lost.count }

    public func report(run: RunInfo, files: [TraceReport.File]) -> TraceReport {
        var undecodedAll = undecoded.byReason
        for (reason, count) in dnsUndecoded { undecodedAll[reason, default: 0] += count }
        undecodedAll["tcpSegmentsSkipped"] = nil
        let packets = TraceReport.Packets(total: records, decoded: decodedPackets, undecoded: undecodedAll,
                                          dns: dnsMessages, notDNS: notDNS, tcpSegmentsSkipped: streams.skipped)
        var total = TraceMetrics()
        var resolvers: [TraceStats] = []
        var resolverMetrics = self.resolverMetrics
        for g in groupKeys.indices where g != options.maxGroups - 1 {
            resolverMetrics[Int(groupKeys[g].resolver)].addRTT(groupMetrics[g].rtt)
        }
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
                               kind: TraceStatsBuilder.kind(isTunnel: domains.isTunnel[d], queries: d < domainQueries.count ? domainQueries[d] : 0,
                                                           nullQueries: d < domainNullQueries.count ? domainNullQueries[d] : 0,
                                                           txtQueries: d < domainTXTQueries.count ? domainTXTQueries[d] : 0))
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
