import DNSWire
import Foundation
import PathMetrics
import ProbeProtocol
public import Fates
public import Results

/// Turns the streams of a `path` run into their analyses, fates and per-probe records.
public enum PathExport {
    /// The analysis of one stream (RFC 7680 Tmax; one-way delays only when `sharedClock`).
    public static func analysis(_ result: PathStreamResult, tmaxNanos: UInt64, sharedClock: Bool) -> PathAnalysis {
        PathAnalysis(records: result.records, tmaxNanos: tmaxNanos,
                     clockOriginMicros: sharedClock ? result.clockOriginMicros : nil)
    }

    /// Probes over the time from the first send to the last (the sending phase only).
    public static func sendingSeconds(_ r: PathStreamResult) -> Double {
        guard let last = r.records.last?.sentNanos, last > 0 else { return r.elapsedSeconds }
        return Double(last) / 1e9 * Double(r.records.count) / Double(max(1, r.records.count - 1))
    }

    /// Fates (docs/FATES.md) per resolver, `up` and `down`. Probes whose direction of loss is unknown are
    /// left out of both. One-way `delayMs` only with `sharedClock` (client and responder read one clock,
    /// as in the lab); without it the down stream's `sentMs` is the query's send time.
    public static func fates(results: [PathStreamResult], analyses: [PathAnalysis], domain: String, runID: String,
                             seed: UInt64, sharedClock: Bool) -> FateTrace {
        var streams: [FateStream] = []
        var left = 0
        for (result, analysis) in zip(results, analyses) {
            var up: [PacketFate] = []
            var down: [PacketFate] = []
            let sizes = result.wire.compactMap(\.responseSize).sorted()
            let typicalResponse = sizes.isEmpty ? 0 : sizes[sizes.count / 2]
            for (i, record) in result.records.enumerated() {
                let fate = analysis.fates[i]
                guard fate != .lostUnknown else { left += 1; continue }
                let sentMs = Double(record.sentNanos) / 1e6
                let wire = result.wire[i]
                let copies = record.view?.copies ?? 0
                var upDelay: Double?
                var downSentMs = sentMs
                if sharedClock, let rx = record.view?.receivedMicros {
                    let origin = Double(result.clockOriginMicros)
                    downSentMs = max(0, (Double(rx) - origin) / 1000)
                    upDelay = max(0, downSentMs - sentMs)
                }
                up.append(PacketFate(sentMs: sentMs, size: wire.querySize, delivered: copies > 0,
                                     delayMs: copies > 0 ? upDelay : nil, copies: copies > 1 ? copies : nil))
                guard copies > 0 else { continue }
                let delivered = fate == .delivered
                var downDelay: Double?
                if delivered, sharedClock, upDelay != nil, let first = record.arrivals.first {
                    downDelay = max(0, Double(first) / 1e6 - downSentMs)
                }
                down.append(PacketFate(sentMs: downSentMs, size: wire.responseSize ?? typicalResponse, delivered: delivered,
                                       delayMs: downDelay,
                                       copies: delivered && record.arrivals.count > 1 ? record.arrivals.count : nil))
            }
            down.sort { $0.sentMs < $1.sentMs }
            if !up.isEmpty { streams.append(FateStream(resolver: result.resolver.description, domain: domain, direction: .up, packets: up)) }
            if !down.isEmpty { streams.append(FateStream(resolver: result.resolver.description, domain: domain, direction: .down, packets: down)) }
        }
        let probes = results.map(\.records.count).reduce(0, +)
        var description = "path run \(runID), \(probes) probes over \(results.count) resolver(s)"
        if left > 0 { description += "; \(left) probes with an unknown direction of loss left out" }
        if !sharedClock { description += "; one-way delays not measured (no shared clock)" }
        return FateTrace(source: .init(kind: "path", description: description, seed: seed), streams: streams)
    }

    /// One JSON object per probe (`--records FILE`), to compare a run with a relay log or a capture:
    /// the QNAME and DNS id identify the datagram, `PathProbe.identify` maps a QNAME back to (stream, seq).
    public struct RecordLine: Codable, Sendable {
        public var resolver: String
        public var stream: UInt32
        public var seq: UInt64
        public var qname: String
        public var dnsID: UInt16
        public var querySize: Int
        public var sentNs: UInt64
        public var fate: PathFate
        /// Responder view: copies received, its clock at the first copy (µs since the epoch), receive order.
        public var responderCopies: Int?
        public var responderReceivedMicros: UInt64?
        public var responderArrivalIndex: UInt64?
        /// Every authenticated response copy, nanoseconds on the client clock (`sentNs`'s).
        public var arrivalsNs: [UInt64]
        public var otherResponses: Int
    }

    public static func recordLines(results: [PathStreamResult], analyses: [PathAnalysis], settings: PathSettings) -> String {
        var out = ""
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        for (result, analysis) in zip(results, analyses) {
            for (i, r) in result.records.enumerated() {
                let wire = result.wire[i]
                let probe = PathProbe(stream: result.stream, seq: UInt32(truncatingIfNeeded: r.seq),
                                      downloadBytes: settings.downloadBytes, recordType: settings.recordType)
                let meta = probe.meta(nonce: wire.nonce, totalCharacters: settings.uploadCharacters)
                let name = (try? ProbeName.build(meta: meta, zone: settings.zone, key: settings.key))?.description ?? ""
                let line = RecordLine(resolver: result.resolver.description, stream: result.stream, seq: r.seq, qname: name,
                                      dnsID: wire.dnsID, querySize: wire.querySize, sentNs: r.sentNanos,
                                      fate: analysis.fates[i], responderCopies: r.view?.copies,
                                      responderReceivedMicros: r.view?.receivedMicros,
                                      responderArrivalIndex: r.view?.arrivalIndex, arrivalsNs: r.arrivals,
                                      otherResponses: r.otherResponses)
                if let data = try? encoder.encode(line) { out += String(decoding: data, as: UTF8.self) + "\n" }
            }
        }
        return out
    }
}
