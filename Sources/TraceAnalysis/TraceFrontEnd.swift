import Base
import Capture

/// The per-packet half of the analysis, everything that depends only on the order of packets and not
/// on transactions: the DNS port filter, DNS over TCP reassembly, the question scan, the resolver and
/// tunnel-domain tables, and the transaction key with its hash. It turns each decoded packet into
/// `TraceEvent`s for `TransactionMatcher`; TracePipeline runs it on the reading thread.
///
/// Every query gets its domain here, retransmissions included (the matcher learns later that they are
/// retransmissions). That changes nothing: a name seen again finds the domain it was given or one
/// that claimed it since, and never adds a domain (TunnelDomains interns on a name's first query).
struct TraceFrontEnd {
    /// The per-packet tables in raw memory: the loop touches them without reference counting or
    /// copy-on-write checks. Owned by one front end (copied when a copy of it is used, `own()`).
    final class Buffers: @unchecked Sendable {
        static let recentLines = 64
        /// `options.dnsPorts` as a bitmap: two lookups per packet.
        let portBits = UnsafeMutablePointer<UInt64>.allocate(capacity: 1024)
        /// The resolvers last looked up (a direct-mapped cache in front of `resolverIndex`).
        let recentEndpoints = UnsafeMutablePointer<Endpoint>.allocate(capacity: recentLines)
        let recentResolvers = UnsafeMutablePointer<Int32>.allocate(capacity: recentLines)
        /// DNS messages that did not scan, by `DNSQuestionScan.Failure.index`.
        let failures = UnsafeMutablePointer<Int>.allocate(capacity: DNSQuestionScan.Failure.allCases.count)
        // What one question scan writes.
        let name = UnsafeMutableRawBufferPointer.allocate(byteCount: 256, alignment: 8)
        let labelStarts = UnsafeMutableBufferPointer<Int>.allocate(capacity: DNSQuestionScan.maxLabels + 1)

        init() {
            portBits.initialize(repeating: 0, count: 1024)
            recentEndpoints.initialize(repeating: Endpoint(address: .v4(0), port: 0), count: Self.recentLines)
            recentResolvers.initialize(repeating: -1, count: Self.recentLines)
            failures.initialize(repeating: 0, count: DNSQuestionScan.Failure.allCases.count)
            name.initializeMemory(as: UInt8.self, repeating: 0)
            labelStarts.initialize(repeating: 0)
        }

        /// A copy of the state (ports, counts); the cache starts empty.
        func copy() -> Buffers {
            let b = Buffers()
            b.portBits.update(from: portBits, count: 1024)
            b.failures.update(from: failures, count: DNSQuestionScan.Failure.allCases.count)
            return b
        }

        deinit {
            portBits.deallocate()
            recentEndpoints.deallocate()
            recentResolvers.deallocate()
            failures.deallocate()
            name.deallocate()
            labelStarts.deallocate()
        }
    }

    let encodedLabelMin: Int
    let maxResolvers: Int
    private var buffers = Buffers()
    // The buffers' memory, as plain values the per-packet code reads without touching `buffers`.
    private var portBits: UnsafeMutablePointer<UInt64>
    private var recentEndpoints: UnsafeMutablePointer<Endpoint>
    private var recentResolvers: UnsafeMutablePointer<Int32>
    private var failures: UnsafeMutablePointer<Int>
    private var name: UnsafeMutableRawBufferPointer
    private var labelStarts: UnsafeMutableBufferPointer<Int>
    private(set) var domains: TunnelDomains
    private(set) var streams = TCPStreams()
    private var resolverIndex = HashIndex()
    private(set) var resolverNames: [Endpoint] = []
    /// The latest time handed on in an event: a packet that yields no message only needs a tick after it.
    private var lastTime: Int64 = .min

    private(set) var dnsMessages = 0
    private(set) var notDNS = 0
    /// DNS messages the snap length cut before their question ended (counted as `snapTruncated`).
    private(set) var snapCutUnscanned = 0

    init(options: TraceOptions) {
        encodedLabelMin = options.encodedLabelMin
        maxResolvers = max(1, min(options.maxResolvers, TransactionKey.maxResolvers))
        domains = TunnelDomains(encodedLabelMin: options.encodedLabelMin, maxDomains: options.maxDomains)
        portBits = buffers.portBits
        recentEndpoints = buffers.recentEndpoints
        recentResolvers = buffers.recentResolvers
        failures = buffers.failures
        name = buffers.name
        labelStarts = buffers.labelStarts
        for port in options.dnsPorts { portBits[Int(port) >> 6] |= 1 << UInt64(port & 63) }
    }

    /// Makes the buffers this front end's own when another copy of it shares them (value semantics:
    /// call before a run of `packet` on a copy that may not be the only one).
    mutating func own() {
        guard !isKnownUniquelyReferenced(&buffers) else { return }
        buffers = buffers.copy()
        portBits = buffers.portBits
        recentEndpoints = buffers.recentEndpoints
        recentResolvers = buffers.recentResolvers
        failures = buffers.failures
        name = buffers.name
        labelStarts = buffers.labelStarts
    }

    /// DNS messages that did not scan, by reason.
    var dnsUndecoded: [String: Int] {
        var out: [String: Int] = [:]
        for (i, failure) in DNSQuestionScan.Failure.allCases.enumerated() where failures[i] > 0 { out[failure.rawValue] = failures[i] }
        return out
    }

    @inline(__always) private func isDNSPort(_ port: UInt16) -> Bool {
        portBits[Int(port) >> 6] & (1 << UInt64(port & 63)) != 0
    }

    /// One decoded packet: `emit` receives its DNS messages (none, one, or for TCP several), or a tick
    /// when it is on a DNS port, carries none, and is later than every event before it.
    /// `knownDomains`: find a query's domain from its suffix hashes when they name a known one (the
    /// shortcut of the pipelined reader); false takes the full grouping path every time.
    @inline(__always)
    mutating func packet(
        _ header: PacketHeader, _ payload: UnsafeRawBufferPointer, knownDomains: Bool, _ emit: (TraceEvent) -> Void
    ) {
        guard isDNSPort(header.sourcePort) || isDNSPort(header.destinationPort) else {
            notDNS += 1
            return
        }
        var emitted = false
        switch header.transport {
        case .udp:
            emitted = message(header, payload, knownDomains: knownDomains, emit)
        case .tcp:
            // DNS over TCP is rare next to UDP: the messages a segment completes are copied out.
            var messages: [[UInt8]] = []
            streams.segment(header, payload) { messages.append(Array($0)) }
            for m in messages where m.withUnsafeBytes({ message(header, $0, knownDomains: knownDomains, emit) }) { emitted = true }
        }
        if !emitted, header.timestampNanos > lastTime {
            lastTime = header.timestampNanos
            emit(.tick(header.timestampNanos))
        }
    }

    @inline(__always)
    private mutating func message(
        _ header: PacketHeader, _ bytes: UnsafeRawBufferPointer, knownDomains: Bool, _ emit: (TraceEvent) -> Void
    ) -> Bool {
        var scan = DNSQuestionScan()
        if let failure = DNSQuestionScan.scan(bytes, scratch: name, labelStarts: labelStarts, into: &scan) {
            if header.missingBytes > 0 { snapCutUnscanned += 1 } else { failures[failure.index] += 1 }
            return false
        }
        dnsMessages += 1
        let time = header.timestampNanos
        if time > lastTime { lastTime = time }
        let key: TransactionKey
        var domain: Int32 = 0
        let kind: TraceEvent.Kind
        if !scan.isResponse {
            let r = resolver(Endpoint(address: header.destination, port: header.destinationPort))
            if knownDomains {
                scan.prepareDomainHashes(encodedLabelMin: encodedLabelMin, labelStarts: labelStarts)
            }
            if knownDomains, let known = domains.knownDomain(scan) {
                domain = known
            } else {
                domain = domains.domain(scan: scan, labelStarts: labelStarts)
            }
            key = TransactionKey(client: header.source, clientPort: header.sourcePort, id: scan.id, resolver: r,
                                 qtype: scan.qtype, name: scan.nameHash)
            kind = .query
        } else {
            let r = resolver(Endpoint(address: header.source, port: header.sourcePort))
            key = TransactionKey(client: header.destination, clientPort: header.destinationPort, id: scan.id, resolver: r,
                                 qtype: scan.qtype, name: scan.nameHash)
            kind = .response
        }
        emit(TraceEvent(key: key, domain: domain, size: Int32(truncatingIfNeeded: bytes.count + header.missingBytes), time: time,
                        hash: key.hash, flags: scan.flags, kind: kind, snapCut: header.missingBytes > 0))
        return true
    }

    @inline(__always)
    private mutating func resolver(_ endpoint: Endpoint) -> Int32 {
        let hash = endpoint.hash64
        let line = Int(truncatingIfNeeded: hash >> 58)  // 64 lines
        let recent = recentResolvers[line]
        if recent >= 0, recentEndpoints[line] == endpoint { return recent }
        return newResolver(endpoint, hash: hash, line: line)
    }

    private mutating func newResolver(_ endpoint: Endpoint, hash: UInt64, line: Int) -> Int32 {
        let index: Int32
        if let known = resolverIndex.find(hash, where: { resolverNames[Int($0)] == endpoint }) {
            index = known
        } else if resolverNames.count < maxResolvers {
            index = Int32(resolverNames.count)
            resolverIndex.insert(hash, index)
            resolverNames.append(endpoint)
        } else {
            return Int32(maxResolvers - 1)  // the last one absorbs the rest (docs/TRACE.md, "Memory")
        }
        recentEndpoints[line] = endpoint
        recentResolvers[line] = index
        return index
    }
}

extension Endpoint {
    /// A cheap 64-bit hash for the resolver index.
    var hash64: UInt64 {
        switch address {
        case .v4(let a): DNSQuestionScan.mix(UInt64(a) << 16 | UInt64(port), 4)
        case .v6(let hi, let lo): DNSQuestionScan.mix(DNSQuestionScan.mix(hi, lo), UInt64(port))
        }
    }
}
