public import Base
public import Results
public import DNSWire

/// `path` through a resolver reached over TCP, TLS or HTTPS: a paced stream of the same probes
/// (`--rate`, `--count`, `--size`, `--record-type`), each judged by the prober on its own.
///
/// What carries over from UDP and what does not: the kernel retransmits lost TCP segments and
/// delivers in order, so per-direction loss (up/down), reordering and duplicates of the path are
/// not observable from the client and are not reported. Measured instead: RTT (RFC 2681, on open
/// pipelined connections, so queueing behind earlier queries on the same connection is part of
/// it), the rate answers came back at, timeouts (no answer within Tmax: a stalled connection or a
/// slow resolver), wrong answers, and the connections set up and failed, by named reason.
public enum StreamPath {
    public static let note = StreamPathResult.note

    /// Sends `count` probes at `rate` through `target` (which `prober.targets` must name) and
    /// returns what came back.
    public static func run(prober: Prober, target: ResolverTarget, zone: DNSName, rate: Double, count: Int,
                           uploadCharacters: Int, downloadBytes: Int, type: DNSType) async -> StreamPathResult {
        let endpoint = target.endpoint
        let before = prober.transports?.connections(of: endpoint) ?? ConnectionCounts()
        let first = await prober.download(endpoint, zone: zone, bytes: downloadBytes, type: type, queryCharacters: uploadCharacters)
        var settings = CapacitySettings()
        settings.timeoutSeconds = Double(prober.timeout.nanoseconds) / 1e9
        let step = await CapacityProbe(prober: prober, settings: settings)
            .step(rate: rate, resolver: endpoint, zone: zone, queryCharacters: uploadCharacters, answerBytes: downloadBytes,
                  baselineMedianMs: nil, count: count, type: type)
        let after = prober.transports?.connections(of: endpoint) ?? ConnectionCounts()
        return StreamPathResult(resolver: target.description, transport: target.transport, sent: step.sent, answered: step.answered,
                                timedOut: step.lost, refused: step.refused, servfail: step.servfail, otherFailures: step.otherFailures,
                                offeredRate: step.offeredRate, answeredRate: step.answeredRate, rttMs: step.rttMs,
                                firstQueryMs: first.ok ? first.rttNanos.map { Double($0) / 1e6 } : nil,
                                firstQueryFailure: first.ok ? nil : (first.detail ?? first.failure?.rawValue),
                                connections: after.since(before), lastConnectionFailure: prober.transports?.failure(of: endpoint)?.name)
    }
}
