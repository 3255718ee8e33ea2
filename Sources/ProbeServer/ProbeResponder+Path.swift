import DNSWire
import ProbeProtocol

extension ProbeResponder {
    /// A path probe: record its arrival, answer with the stream's receive history (docs/PROTOCOL.md,
    /// "Path replies") padded with keystream to the payload size asked for, in the record type asked for.
    func path(_ query: DNSMessage, _ question: DNSQuestion, _ meta: ProbeMeta) -> Outcome {
        guard let probe = try? PathProbe(meta: meta), probe.recordType == question.type,
              DownloadLayout.supportedTypes.contains(probe.recordType) else {
            return reply(query, rcode: .refused, .refused)
        }
        let zone = configuration.zone
        let capacity = DownloadLayout.maxPayload(type: probe.recordType, zone: zone)
        let fit = (capacity - PathReply.byteCount(entries: 0)) / PathReply.entryLength
        guard fit >= 1 else { return reply(query, rcode: .refused, .refused) }
        let history = pathStreams.record(probe, maxEntries: min(PathReply.maxEntries, fit))
        var payload = history.sealed(nonce: meta.nonce, key: configuration.key)
        let asked = min(probe.downloadBytes, capacity)
        if asked > payload.count {
            payload += DownloadLayout.payload(key: configuration.key, nonce: meta.nonce, count: asked)[payload.count...]
        }
        guard let records = try? DownloadLayout.records(payload: payload, type: probe.recordType, owner: question.name,
                                                        zone: zone, ttl: configuration.ttl) else {
            return reply(query, rcode: .refused, .refused)
        }
        return reply(query, answers: records, probe.drain ? .pathDrain : .path)
    }
}
