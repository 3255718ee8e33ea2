public import Base
public import Results

extension PathSession {
    /// `path`'s whole measurement: the sequenced streams to the UDP resolvers of `settings` and, at
    /// the same time, the paced probes of `StreamPath` through each TCP, TLS or HTTPS resolver of
    /// `streams` (which `prober.targets` must name), in the order given. Cancelling the task stops
    /// both and returns what they measured.
    public static func run(_ settings: PathSettings, streams: [ResolverTarget], prober: Prober) async throws
        -> (udp: [PathStreamResult], streams: [StreamPathResult])
    {
        async let udp: [PathStreamResult] = settings.resolvers.isEmpty ? [] : run(settings)
        let streamResults = await withTaskGroup(of: (Int, StreamPathResult).self) { group in
            for (i, target) in streams.enumerated() {
                group.addTask {
                    (i, await StreamPath.run(prober: prober, target: target, zone: settings.zone, rate: settings.rate, count: settings.count,
                                             uploadCharacters: settings.uploadCharacters, downloadBytes: settings.downloadBytes,
                                             type: settings.recordType))
                }
            }
            var out: [(Int, StreamPathResult)] = []
            for await r in group { out.append(r) }
            return out.sorted { $0.0 < $1.0 }.map(\.1)
        }
        return (try await udp, streamResults)
    }
}
