import Base
import DNSWire
import EngineModels
import ProbeProtocol
import Results

extension Scanner {
    /// One pair against the user's own MasterDnsVPN server (`scan --server masterdnsvpn`), in the
    /// engine's own requests and units, with the stages of every scan: reachability (the zone's SOA,
    /// any answer but REFUSED) -> honest answers (the smallest upload request must come back as the
    /// server's reply, echoing its code and size) -> upload MTU (MTU_UP_REQ payload bytes) ->
    /// download MTU (MTU_DOWN_REQ bytes, the request padded to the pair's upload MTU, as the engine
    /// does) -> confirmation. The searches are `MTUSearch` over the engine's own ranges (upload 10 to
    /// what the name holds, at most 512; download 20 to 4096), one byte at a time as the engine's
    /// own search, so `upload.bytes` and `download.bytes` are the values the engine would find.
    func scanPairOnServer(_ server: MasterDnsVPNServerProber, _ resolver: Endpoint, _ zone: DNSName) async -> ScanPair? {
        var log: [ProbeOutcome] = []
        var pair = ScanPair(resolver: resolver.description, domain: zone.description, accepted: false)
        prober.name(&pair, resolver)
        func finish(_ stage: ScanStage?, _ failure: ProbeFailure?, _ detail: String? = nil) -> ScanPair? {
            Self.finished(&pair, log: log, stage, failure, detail)
        }
        let reach = await attempt({ await prober.reachability(resolver, zone: zone) }, &log, quietRetries: Self.quietRetries)
        if let f = reach.failure { return finish(.reachability, f, reach.detail) }
        let honest = await attempt({ await server.echo(resolver, zone: zone) }, &log, quietRetries: Self.quietRetries)
        if let f = honest.failure { return finish(.honesty, f, honest.detail) }

        let probe = server.probe
        let ranges = Self.serverRanges(configuration, capacity: probe.uploadCapacity(zone: zone))
        var controls: [ProbeOutcome] = []
        let up = search(ranges.upload)
        let upResult = await up.run(control: { await server.echo(resolver, zone: zone) }) { bytes in
            await settled(resolver, zone, extra: &controls) { await server.upload(resolver, zone: zone, bytes: bytes) }
        }
        log += upResult.steps.flatMap(\.outcomes) + controls
        guard let upBytes = upResult.best, let upRequest = probe.upload(size: upBytes, zone: zone) else {
            return finish(.upload, upResult.dominantFailure ?? .timeout, "no size passed")
        }
        var upLimit = upResult.limitedBy?.sizeLimit
        if upLimit == nil, upBytes == ranges.upload.upperBound, ranges.upload.upperBound < MasterDnsVPNMTUProbe.uploadRange.upperBound {
            // The whole name was used: what 253 characters hold under this domain.
            upLimit = .recordType
        }
        let upChars = LowerBase36.encodedLength(probe.cipher.overhead + MasterDnsVPNFrame.PacketType.mtuUpRequest.headerLength + upBytes)
        pair.upload = ScanPair.Upload(bytes: upBytes, qnameChars: upRequest.nameText, payloadChars: upChars,
                                      encoding: "lowerbase36", limitedBy: upLimit, caseChanged: false)

        controls = []
        let down = search(ranges.download)
        let model = MasterDnsVPNGoModel(encryption: EncryptionMethod(rawValue: probe.cipher.method) ?? .xor,
                                        baseEncodeData: probe.base64Replies)
        let domainLength = zone.textLength
        let guesses: MTUSearch.Guesses = { lowOutcome in
            // The sizes whose answers would fill the likely limits, from the answer measured at the
            // lowest size and the engine's answer layout; every guess is verified by probes.
            guard let measured = lowOutcome.responseSize else { return [] }
            let offset = measured - model.downloadResponseBytes(payload: down.low, upload: upBytes, domainLength: domainLength)
            return Self.likelyResponseLimits.compactMap { limit in
                WireArithmetic.largest(in: down.low...down.high) {
                    model.downloadResponseBytes(payload: $0, upload: upBytes, domainLength: domainLength) + offset <= limit
                }
            }
        }
        let downResult = await down.run(guesses: guesses, control: { await server.echo(resolver, zone: zone) }) { bytes in
            await settled(resolver, zone, extra: &controls) {
                await server.download(resolver, zone: zone, bytes: bytes, uploadMTU: upBytes)
            }
        }
        log += downResult.steps.flatMap(\.outcomes) + controls
        guard let downBytes = downResult.best else {
            return finish(.download, downResult.dominantFailure ?? .timeout, "no size passed")
        }
        pair.download = ScanPair.Download(bytes: downBytes, responseSize: downResult.bestOutcome?.responseSize ?? 0,
                                          recordType: "TXT", limitedBy: downResult.limitedBy?.sizeLimit)

        if let rejected = await confirm(&pair, log: &log,
                                        upload: { await server.upload(resolver, zone: zone, bytes: upBytes) },
                                        download: { await server.download(resolver, zone: zone, bytes: downBytes, uploadMTU: upBytes) }) {
            return finish(.confirmation, rejected.failure, rejected.detail)
        }
        return finish(nil, nil)
    }

    /// The engine's search ranges cut to the scan's: upload from the engine's floor (10) to what the
    /// name holds under the domain (at most 512); download 20 to 4096 (the server's bounds), within
    /// `--download-min/--download-max`.
    static func serverRanges(_ c: ScanConfiguration, capacity: Int) -> (upload: ClosedRange<Int>, download: ClosedRange<Int>) {
        let upHigh = min(MasterDnsVPNMTUProbe.uploadRange.upperBound, capacity)
        let upLow = min(MasterDnsVPNMTUProbe.uploadRange.lowerBound, upHigh)
        let downLow = max(MasterDnsVPNMTUProbe.downloadRange.lowerBound, c.downloadBytes.lowerBound)
        let downHigh = max(downLow, min(MasterDnsVPNMTUProbe.downloadRange.upperBound, c.downloadBytes.upperBound))
        return (upLow...upHigh, downLow...downHigh)
    }
}
