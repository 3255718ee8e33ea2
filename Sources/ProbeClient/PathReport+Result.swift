public import Results

extension PathReport {
    /// `path.json` from the streams of a run and their analyses: the one place path results become
    /// report rows.
    public init(run: RunInfo, settings: Settings, results: [PathStreamResult], analyses: [PathAnalysis],
                udpReceiveBufferErrors: Int? = nil, streamResolvers: [StreamPathResult]? = nil) {
        let rows = zip(results, analyses).map { result, analysis in
            let sent = result.records.count + result.inFlightExcluded
            let rate = result.elapsedSeconds > 0 && sent > 1 ? Double(sent) / PathExport.sendingSeconds(result) : nil
            return ResolverResult(
                resolver: result.resolver.description,
                stream: .init(id: result.stream, elapsedSeconds: result.elapsedSeconds, achievedRate: rate,
                              drainsSent: result.drainsSent, drainsAnswered: result.drainsAnswered,
                              unmatched: result.unmatched, responderAbsent: result.responderAbsent,
                              inFlightExcluded: result.inFlightExcluded, clientSocketDrops: result.clientSocketDrops,
                              datagramsSent: result.datagramsSent, datagramsReceived: result.datagramsReceived),
                analysis: analysis)
        }
        self.init(run: run, settings: settings, client: .init(udpReceiveBufferErrors: udpReceiveBufferErrors), resolvers: rows,
                  streamResolvers: streamResolvers)
    }
}
