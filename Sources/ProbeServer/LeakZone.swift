import DNSWire
import ProbeProtocol
import Synchronization

/// The responder's memory for leak-zone probes (docs/PROTOCOL.md, "Leak zone"): for each mark
/// nonce, the source addresses of the resolvers that asked. Bounded: the oldest marks are
/// forgotten first, and each mark keeps at most `LeakProbe.maximumSources` addresses.
public final class LeakZone: Sendable {
    struct Entry {
        var sources: [[UInt8]] = []
        var total = 0
    }

    struct Table {
        var entries: [[UInt8]: Entry] = [:]
        var order: [[UInt8]] = []
    }

    public let capacity: Int
    private let table = Mutex(Table())

    public init(capacity: Int = 4096) {
        self.capacity = max(1, capacity)
    }

    /// Records that `source` (4 or 16 address bytes) asked for the mark `nonce`.
    public func record(nonce: [UInt8], source: [UInt8]) {
        table.withLock { table in
            if table.entries[nonce] == nil {
                if table.order.count >= capacity, let oldest = table.order.first {
                    table.order.removeFirst()
                    table.entries[oldest] = nil
                }
                table.order.append(nonce)
                table.entries[nonce] = Entry()
            }
            table.entries[nonce]?.total += 1
            if let entry = table.entries[nonce], !entry.sources.contains(source), entry.sources.count < LeakProbe.maximumSources {
                table.entries[nonce]?.sources.append(source)
            }
        }
    }

    /// The distinct sources seen for a mark and how many queries asked for it.
    public func sources(nonce: [UInt8]) -> (sources: [[UInt8]], total: Int) {
        table.withLock { table in
            let entry = table.entries[nonce] ?? Entry()
            return (entry.sources, entry.total)
        }
    }
}

extension ProbeResponder {
    /// A kind-5 probe: a mark is recorded with its asker and answered like an echo; a report
    /// returns the record of the mark it names, sealed.
    func leak(_ query: DNSMessage, _ question: DNSQuestion, _ received: ProbeName.Received, source: [UInt8]) -> Outcome {
        guard let zone = configuration.leakZone else { return reply(query, rcode: .refused, .refused) }
        let meta = received.meta
        switch meta.parameters[0] {
        case LeakProbe.markOperation:
            if !source.isEmpty { zone.record(nonce: meta.nonce, source: source) }
            var outcome = answerReply(query, question, received)
            outcome.disposition = .leak
            return outcome
        case LeakProbe.reportOperation:
            let mark = Array(meta.parameters[1...8])
            let (sources, total) = zone.sources(nonce: mark)
            let sealed = LeakProbe.sealReport(sources: sources, total: total, nonce: meta.nonce, key: configuration.key)
            let rr = DNSResourceRecord(name: question.name, ttl: 0, rdata: .txt([sealed]))
            return reply(query, answers: [rr], .leak)
        default:
            return reply(query, rcode: .refused, .refused)
        }
    }
}
