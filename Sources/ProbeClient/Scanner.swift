public import Base
public import DNSWire
public import NIOCore
public import ProbeProtocol
import Synchronization
public import Results

/// Everything a scan needs to know.
public struct ScanConfiguration: Sendable {
    public var resolvers: [Endpoint]
    public var domains: [DNSName]
    public var encoding: LabelEncoding = .base32
    /// Record types whose download size is measured, in order; the first is the pair's `download`
    /// (and the one confirmation probes use), every one is in `downloads` (each engine model reads
    /// the type its engine answers with: TXT for MasterDnsVPN, dnstt and slipstream, NULL for iodine).
    public var recordTypes: [DNSType] = [.txt]
    /// The first of `recordTypes`.
    public var recordType: DNSType { recordTypes.first ?? .txt }
    public var timeout: TimeAmount = .seconds(2)
    public var attempts = 2
    public var concurrency = 256
    public var perResolverQPS: Double = 100
    public var confirmProbes = 3
    public var minValid: Int?
    /// Upload search bounds in payload characters; the upper bound is cut to what fits under each domain.
    public var uploadCharacters: ClosedRange<Int> = ProbeMeta.characterCount...QNameCapacity.maxNameCharacters
    public var downloadBytes: ClosedRange<Int> = 20...4096
    public var seed: UInt64 = 0
    /// Accepted pairs whose confirmation loss ratio is above this are flagged and left out of the
    /// exports and the synced MTU (`--max-loss`).
    public var maxLoss = ScanConfiguration.defaultMaxLoss
    /// How long a resolver that answers SERVFAIL from its cache of an earlier failure is waited
    /// out before its SERVFAIL is believed.
    public var cachedFailureWait: TimeAmount = .seconds(3)
    /// Scan-wide congestion control (`CongestionWindow`): a window of queries in flight across all
    /// resolvers, at most `concurrency`, halved when answers that should come are lost.
    public var congestionControl = true

    /// 20 %: with the default 3 confirmation probes per direction (6 in all) one lost probe
    /// (16.7 %) passes, so a single unlucky drop on a clean path does not flag it, and two (33 %)
    /// do not; a tunnel that must resend a fifth of its queries spends more of the path on
    /// retransmission than on data at the loss rates its ARQ and FEC are tuned for (README, "scan").
    public static let defaultMaxLoss = 0.2

    public init(resolvers: [Endpoint], domains: [DNSName]) {
        self.resolvers = resolvers
        self.domains = domains
    }
}

public struct ScanProgress: Sendable {
    public var total: Int
    public var done: Int
    public var accepted: Int
    public var elapsedSeconds: Double
    public var rejected: Int { done - accepted }
    /// Linear estimate of the time left, nil before the first pair is done.
    public var etaSeconds: Double? { done == 0 ? nil : elapsedSeconds / Double(done) * Double(total - done) }
}

public struct ScanResult: Sendable {
    public var pairs: [ScanPair]
    public var notTested: Int
    public var queries: Int
    public var interrupted: Bool
    /// What the congestion window did; nil without congestion control.
    public var congestion: CongestionWindow.Stats?
}

/// Runs the staged scan over every resolver-domain pair with bounded concurrency.
///
/// Stages, cheapest first; a pair is dropped at its first failure and the reason kept:
/// reachability -> honest answers -> upload MTU -> download MTU -> confirmation.
public struct Scanner: Sendable {
    public let configuration: ScanConfiguration
    public let prober: Prober
    /// Set for `scan --server masterdnsvpn`: every probe is one of MasterDnsVPN's own MTU-test
    /// requests to the user's server (`scanPairOnServer`), sent with `prober`'s transport.
    public let masterDnsVPN: MasterDnsVPNServerProber?

    public init(configuration: ScanConfiguration, prober: Prober, masterDnsVPN: MasterDnsVPNMTUProbe? = nil) {
        self.configuration = configuration
        var prober = prober
        if configuration.congestionControl, prober.congestion == nil {
            prober.congestion = CongestionWindow(ceiling: configuration.concurrency)
        }
        self.prober = prober
        self.masterDnsVPN = masterDnsVPN.map { MasterDnsVPNServerProber(prober: prober, probe: $0) }
    }

    /// The probe that passed before and tells a bad moment from a size limit: the echo, or against
    /// a MasterDnsVPN server its smallest upload request.
    func control(_ resolver: Endpoint, _ zone: DNSName) async -> ProbeOutcome {
        if let masterDnsVPN { return await masterDnsVPN.echo(resolver, zone: zone) }
        return await prober.echo(resolver, zone: zone)
    }

    public func run(progress: (@Sendable (ScanProgress) -> Void)? = nil) async -> ScanResult {
        var work: [(Endpoint, DNSName)] = []
        for r in configuration.resolvers { for d in configuration.domains { work.append((r, d)) } }
        var rng = SplitMix64(seed: configuration.seed)
        work.shuffle(using: &rng)
        let total = work.count
        let start = NIODeadline.now()
        let state = Mutex((done: 0, accepted: 0))
        let minValid = configuration.minValid
        var pairs: [ScanPair] = []
        var started = 0
        var stoppedEarly = false

        await withTaskGroup(of: ScanPair?.self) { group in
            var iterator = work.makeIterator()
            func launch() -> Bool {
                guard let (resolver, domain) = iterator.next() else { return false }
                started += 1
                group.addTask { await scanPair(resolver, domain) }
                return true
            }
            for _ in 0..<max(1, configuration.concurrency) where launch() {}
            while let finished = await group.next() {
                guard let pair = finished else { continue }
                pairs.append(pair)
                let snapshot = state.withLock { s in
                    s.done += 1
                    if pair.accepted { s.accepted += 1 }
                    return s
                }
                progress?(ScanProgress(total: total, done: snapshot.done, accepted: snapshot.accepted,
                                       elapsedSeconds: Double((NIODeadline.now() - start).nanoseconds) / 1e9))
                if let minValid, snapshot.accepted >= minValid {
                    stoppedEarly = true
                    group.cancelAll()
                    continue
                }
                if !Task.isCancelled, !stoppedEarly { _ = launch() }
            }
        }
        pairs.sort { ($0.resolver, $0.domain) < ($1.resolver, $1.domain) }
        let interrupted = Task.isCancelled
        return ScanResult(pairs: pairs, notTested: total - pairs.count,
                          queries: pairs.reduce(0) { $0 + $1.queries }, interrupted: interrupted,
                          congestion: prober.congestion?.stats)
    }

    /// The response sizes a download limit most often is: 1232 bytes (the DNS Flag Day 2020 default,
    /// unbound's and BIND's `max-udp-size`) and 512 (RFC 1035 2.3.4, no EDNS).
    static let likelyResponseLimits = [1232, 512]

    /// For TXT and NULL, the payloads whose responses would be exactly `likelyResponseLimits` bytes:
    /// the response measured at the lowest payload plus the record layout's growth (a TXT string of
    /// up to 255 bytes costs one length byte more, RFC 1035 3.3.14; NULL grows byte for byte). The
    /// search verifies every guess, so a resolver that lays out its answer differently costs a few
    /// probes, never a wrong size.
    static func downloadGuesses(type: DNSType, low: Int, high: Int, upstreamLimit: Int? = nil) -> MTUSearch.Guesses? {
        // An honouring responder bounds answers at the advertised upstream size: guess that first.
        let limits = (upstreamLimit.map { [$0] } ?? []) + likelyResponseLimits
        let growth: (Int) -> Int
        switch type {
        case .txt: growth = txtGrowth
        case .null: growth = { $0 }
        default: return nil
        }
        return { lowOutcome in
            guard let measured = lowOutcome.responseSize else { return [] }
            return limits.compactMap { limit -> Int? in
                // The largest payload whose response fits the limit (growth is monotone): bisect.
                var lo = low, hi = high
                guard measured + growth(lo) - growth(low) <= limit else { return nil }
                while lo < hi {
                    let mid = (lo + hi + 1) / 2
                    if measured + growth(mid) - growth(low) <= limit { lo = mid } else { hi = mid - 1 }
                }
                return lo
            }
        }
    }

    /// The TXT RDATA for `payload` bytes: the bytes plus one length byte per 255-byte string.
    static func txtGrowth(_ payload: Int) -> Int {
        payload + (payload + DownloadLayout.txtStringBytes - 1) / DownloadLayout.txtStringBytes
    }

    /// Quiet retries a reachability or echo probe gets at most (`CongestionWindow.timeoutRule`): one,
    /// and more while each one met a decrease or lost with others.
    static let quietRetries = 3

    /// Retries a single probe while it fails transiently. With `quietRetries`, a timeout is final
    /// only when a retry sent once the scan was quiet times out too, meets no decrease and loses
    /// alone (`CongestionWindow.timeoutRule`). Every timed-out probe gets that quiet retry, even one
    /// that looked quiet when sent: the scan's own bursts are lost together, and which of them times
    /// out first (seeing no other loss yet) is chance. At 1,000 addresses of one stock unbound, 104
    /// pairs once lost both attempts in such a burst while sent "quiet" (half a grown window in
    /// flight) and were called unreachable.
    func attempt(_ probe: () async -> ProbeOutcome, _ log: inout [ProbeOutcome], quietRetries: Int = 0) async -> ProbeOutcome {
        var last = ProbeOutcome.fail(.timeout)
        var tries = 0
        var congestedRetries = 0
        while tries < max(1, configuration.attempts), !Task.isCancelled {
            last = await probe()
            log.append(last)
            if last.ok || !(last.failure?.isTransient ?? false) { break }
            // Lost to the scan's own congestion (`CongestionWindow`): not an attempt.
            if last.congested, congestedRetries < MTUSearch.congestedRetries {
                congestedRetries += 1
                continue
            }
            tries += 1
        }
        guard prober.congestion != nil, last.failure == .timeout else { return last }
        let retries = await MTUSearch.askedQuietly(upTo: quietRetries, probe)
        log += retries
        guard var verdict = retries.last else { return last }
        if verdict.failure == .timeout {
            verdict.detail = "no answer, also to \(retries.count == 1 ? "a retry" : "\(retries.count) retries") sent when the scan was quiet"
        }
        return verdict
    }

    /// A size search over `sizes` with the scan's attempts, and under a congestion window the
    /// quiet retries of `CongestionWindow.timeoutRule` before a timeout rejects a pair or bounds its MTU.
    func search(_ sizes: ClosedRange<Int>) -> MTUSearch {
        MTUSearch(low: sizes.lowerBound, high: sizes.upperBound, attempts: configuration.attempts,
                  quietRetries: prober.congestion == nil ? 0 : Self.quietRetries)
    }

    /// Runs `probe`; when it gets SERVFAIL, tells a failure of this size from the resolver answering
    /// every name under the zone from its cache of an earlier failure (knot-resolver does so for
    /// about a second after an upstream failure). A control probe (an echo, which passed before)
    /// decides: when it passes, the SERVFAIL belongs to this size. When it fails too (or the
    /// SERVFAIL carries Extended DNS Error 13, "Cached Error", RFC 8914 4.14), the cache is waited
    /// out (control probes 250 ms, 500 ms, 1 s, ... apart, up to `cachedFailureWait`) and the size
    /// asked once more; if it fails again it caused the failure itself, and its own cached failure
    /// is waited out before returning, so that the next size starts clean. Control probes go into
    /// `extra`.
    func settled(_ resolver: Endpoint, _ zone: DNSName, extra: inout [ProbeOutcome],
                 _ probe: () async -> ProbeOutcome) async -> ProbeOutcome {
        let first = await probe()
        guard first.failure == .servfail, !Task.isCancelled else { return first }
        if !first.cachedError {
            let control = await control(resolver, zone)
            extra.append(control)
            guard control.failure == .servfail else { return first }
        }
        guard let waited = await waitOutFailureCache(resolver, zone, extra: &extra) else {
            var outcome = first
            outcome.detail = "the resolver answered SERVFAIL to everything for \(configuration.cachedFailureWait.nanoseconds / 1_000_000) ms"
            return outcome
        }
        var again = await probe()
        if again.failure == .servfail {
            again.settled = true
            again.detail = "SERVFAIL again after \(waited) ms spent waiting out the resolver's failure cache"
            _ = await waitOutFailureCache(resolver, zone, extra: &extra)
        }
        return again
    }

    /// Sends control probes until one passes; returns the milliseconds waited, nil past the budget.
    private func waitOutFailureCache(_ resolver: Endpoint, _ zone: DNSName, extra: inout [ProbeOutcome]) async -> Int64? {
        var waited: Int64 = 0
        var step: Int64 = 250_000_000
        while waited < configuration.cachedFailureWait.nanoseconds, !Task.isCancelled {
            try? await Task.sleep(nanoseconds: UInt64(step))
            waited += step
            step = min(step * 2, 1_000_000_000)
            let control = await control(resolver, zone)
            extra.append(control)
            if control.ok { return waited / 1_000_000 }
        }
        return nil
    }

    /// The largest download payload of `type` through a pair, its response size and what bound it
    /// (`ScanPair.Download`), or the failure that stopped every size; with every probe sent.
    func searchDownload(_ resolver: Endpoint, _ zone: DNSName, type: DNSType, queryCharacters: Int,
                        upstream: ProbeReply.Observed?) async -> (download: ScanPair.Download?, failure: ProbeFailure, outcomes: [ProbeOutcome]) {
        let typeCapacity = DownloadLayout.maxPayload(type: type, zone: zone)
        let down = search(configuration.downloadBytes.lowerBound...min(configuration.downloadBytes.upperBound, typeCapacity))
        let guesses = Self.downloadGuesses(type: type, low: down.low, high: down.high,
                                           upstreamLimit: upstream.flatMap { prober.honorsUpstream($0) ? $0.udpLimit : nil })
        var controls: [ProbeOutcome] = []
        let downResult = await down.run(guesses: guesses, control: { await prober.echo(resolver, zone: zone) }) { bytes in
            await settled(resolver, zone, extra: &controls) {
                await prober.download(resolver, zone: zone, bytes: bytes, type: type, queryCharacters: queryCharacters,
                                      upstream: upstream)
            }
        }
        let outcomes = downResult.steps.flatMap(\.outcomes) + controls
        let failure = downResult.dominantFailure ?? .timeout
        guard let downBytes = downResult.best else { return (nil, failure, outcomes) }
        var downLimit = downResult.limitedBy?.sizeLimit
        if downLimit == nil, downBytes == typeCapacity, typeCapacity < configuration.downloadBytes.upperBound {
            downLimit = .recordType
        }
        var download = ScanPair.Download(bytes: downBytes, responseSize: downResult.bestOutcome?.responseSize ?? 0,
                                         recordType: type.description, limitedBy: downLimit,
                                         upstreamEDNS: upstream.map { Int($0.advertisedSize) })
        var all = outcomes
        // A TXT answer one payload byte larger can be two bytes larger (a new 255-byte string adds its
        // length byte, RFC 1035 3.3.14), so the limit may be one byte above the largest answer seen.
        // The same payload asked with a one-character-shorter name is exactly one byte larger:
        // if it passes, that byte is carried too. Engines' figures are exact only with the exact size.
        if type == .txt, downLimit == .resolverLimit || downLimit == .upstreamEDNS,
           Self.txtGrowth(downBytes + 1) - Self.txtGrowth(downBytes) == 2, queryCharacters > ProbeMeta.characterCount {
            var extra: [ProbeOutcome] = []
            func askBetween() async -> ProbeOutcome {
                await settled(resolver, zone, extra: &extra) {
                    await prober.download(resolver, zone: zone, bytes: downBytes + 1, type: type,
                                          queryCharacters: queryCharacters - 1, upstream: upstream)
                }
            }
            var between = await askBetween()
            if between.failure == .timeout, prober.congestion != nil {
                // Lost, not refused: the byte is left out only when a quiet retry is lost too (`CongestionWindow.timeoutRule`).
                let retries = await MTUSearch.askedQuietly(upTo: Self.quietRetries) { await askBetween() }
                all += [between] + retries.dropLast()
                between = retries.last ?? between
            }
            all += extra + [between]
            if between.ok, let size = between.responseSize, size > download.responseSize { download.responseSize = size }
        }
        return (download, failure, all)
    }

    /// The whole pipeline for one pair; nil when cancelled before it finished.
    func scanPair(_ resolver: Endpoint, _ zone: DNSName) async -> ScanPair? {
        if let masterDnsVPN { return await scanPairOnServer(masterDnsVPN, resolver, zone) }
        var log: [ProbeOutcome] = []
        var pair = ScanPair(resolver: resolver.description, domain: zone.description, accepted: false)
        prober.name(&pair, resolver)
        func finish(_ stage: ScanStage?, _ failure: ProbeFailure?, _ detail: String? = nil) -> ScanPair? {
            if stage == .reachability, prober.transport(of: resolver) != .udp {
                pair.transportFailure = prober.transports?.failure(of: resolver)
            }
            return Self.finished(&pair, log: log, stage, failure, detail)
        }

        let reach = await attempt({ await prober.reachability(resolver, zone: zone) }, &log, quietRetries: Self.quietRetries)
        if let f = reach.failure { return finish(.reachability, f, reach.detail) }
        let honest = await attempt({ await prober.echo(resolver, zone: zone) }, &log, quietRetries: Self.quietRetries)
        if let f = honest.failure { return finish(.honesty, f, honest.detail) }

        // Upload: payload characters in front of the zone.
        let capacity = QNameCapacity.payloadCharacters(under: zone)
        let up = search(configuration.uploadCharacters.lowerBound...min(configuration.uploadCharacters.upperBound, capacity))
        var controls: [ProbeOutcome] = []
        let upResult = await up.run(control: { await prober.echo(resolver, zone: zone) }) { chars in
            await settled(resolver, zone, extra: &controls) { await prober.upload(resolver, zone: zone, characters: chars) }
        }
        log += upResult.steps.flatMap(\.outcomes) + controls
        guard let upChars = upResult.best else {
            return finish(.upload, upResult.dominantFailure ?? .timeout, "no size passed")
        }
        let caseChanged = honest.caseChanged || upResult.steps.contains { $0.outcomes.contains(where: \.caseChanged) }
        let upBytes = prober.encoding.maxBytes(forCharacters: upChars)
        pair.upload = ScanPair.Upload(bytes: upBytes,
                                      qnameChars: QNameCapacity.qnameCharacters(payloadCharacters: upChars, under: zone),
                                      payloadChars: upChars, encoding: prober.encoding.rawValue,
                                      limitedBy: upResult.limitedBy?.sizeLimit, caseChanged: caseChanged)

        // Download: payload bytes in each record type, asked with full-size queries.
        // What the responder saw of the echo: the EDNS size the resolver advertises upstream, and
        // whether the responder honours it (then larger answers fail as upstreamEDNS, unsent).
        let upstream = honest.observed ?? upResult.bestOutcome?.observed
        let type = configuration.recordType
        var downloads: [ScanPair.Download] = []
        for (index, t) in configuration.recordTypes.enumerated() {
            let searched = await searchDownload(resolver, zone, type: t, queryCharacters: upChars, upstream: upstream)
            log += searched.outcomes
            if let download = searched.download {
                downloads.append(download)
            } else if index == 0 {
                return finish(.download, searched.failure, "no size passed")
            } else {
                pair.downloadFailures = (pair.downloadFailures ?? [:]).merging([t.description: searched.failure]) { $1 }
            }
            if Task.isCancelled { return finish(nil, nil) }
        }
        for index in downloads.indices { downloads[index].limitingLeg = PathLeg(downloads[index].limitedBy) }
        guard let primary = downloads.first else { return finish(.download, .timeout, "no size passed") }
        pair.download = primary
        if configuration.recordTypes.count > 1 { pair.downloads = downloads }
        let downBytes = primary.bytes

        // Confirmation: a few more probes at the chosen sizes; the ratio says how steady they are.
        if let rejected = await confirm(&pair, log: &log,
                                        upload: { await prober.upload(resolver, zone: zone, characters: upChars) },
                                        download: { await prober.download(resolver, zone: zone, bytes: downBytes, type: type,
                                                                          queryCharacters: upChars) }) {
            return finish(.confirmation, rejected.failure, rejected.detail)
        }
        return finish(nil, nil)
    }

    /// Ends a pair: its query count, median RTT (of the answered probes) and verdict.
    static func finished(_ pair: inout ScanPair, log: [ProbeOutcome], _ stage: ScanStage?, _ failure: ProbeFailure?,
                         _ detail: String? = nil) -> ScanPair? {
        if Task.isCancelled { return nil }
        pair.queries = log.count
        let rtts = log.compactMap { $0.ok ? $0.rttNanos : nil }.sorted()
        pair.rttMs = rtts.isEmpty ? nil : Double(rtts[rtts.count / 2]) / 1e6
        if let stage, let failure {
            pair.stage = stage
            pair.failure = failure
            pair.reason = "\(stage): \(failure.phrase)" + (detail.map { " (\($0))" } ?? "")
        } else {
            pair.accepted = true
        }
        return pair
    }

    /// The confirmation stage: `confirmProbes` more probes per direction at the chosen sizes; sets the
    /// pair's confirmation, loss (RFC 7680 2.4: no answer within the timeout) and loss flag, and
    /// returns the failure that rejects the pair when fewer than half passed.
    func confirm(_ pair: inout ScanPair, log: inout [ProbeOutcome], upload: () async -> ProbeOutcome,
                 download: () async -> ProbeOutcome) async -> (failure: ProbeFailure, detail: String)? {
        guard configuration.confirmProbes > 0 else { return nil }
        var ok = 0
        var lost = 0
        var confirmFailures: [ProbeFailure] = []
        /// The probes that timed out, upload (true) or download, for their quiet retries.
        var timedOut: [Bool] = []
        for _ in 0..<configuration.confirmProbes {
            // Both sizes passed: a timeout now is loss or congestion, and a probe lost while the
            // scan was congested is asked once more (the path's loss is measured, not the scan's).
            let (u, d) = await CongestionWindow.expectingAnswer {
                var u = await upload()
                if u.congested { log.append(u); u = await upload() }
                var d = await download()
                if d.congested {
                    log.append(d)
                    d = await download()
                }
                return (u, d)
            }
            log += [u, d]
            ok += (u.ok ? 1 : 0) + (d.ok ? 1 : 0)
            lost += (u.failure == .timeout ? 1 : 0) + (d.failure == .timeout ? 1 : 0)
            timedOut += [true, false].filter { ($0 ? u : d).failure == .timeout }
            confirmFailures += [u.failure, d.failure].compactMap { $0 }
            if let size = d.responseSize, d.ok, size > (pair.download?.responseSize ?? 0) {
                pair.download?.responseSize = size
            }
        }
        // Timeouts reject a pair only when they survive a quiet retry (`CongestionWindow.timeoutRule`):
        // while fewer than half passed, each timed-out probe is asked again once the scan is quiet,
        // and one answered then counts as passed, its loss the scan's, not the path's.
        if prober.congestion != nil {
            // (`confirmation.ratio` < 0.5: fewer passed than one per round.)
            for isUpload in timedOut where ok < configuration.confirmProbes && !Task.isCancelled {
                let retries = await CongestionWindow.expectingAnswer {
                    isUpload ? await MTUSearch.askedQuietly(upTo: Self.quietRetries, upload)
                        : await MTUSearch.askedQuietly(upTo: Self.quietRetries, download)
                }
                log += retries
                if retries.last?.ok == true { ok += 1; lost -= 1 }
            }
        }
        let confirmation = ScanPair.Confirmation(sent: 2 * configuration.confirmProbes, succeeded: ok)
        pair.confirmation = confirmation
        pair.loss = ScanPair.loss(lost: lost, sent: confirmation.sent)
        let lossy = (pair.loss?.ratio ?? 0) > configuration.maxLoss
        pair.lossExceeded = lossy
        // On a lossy pair a size above the chosen one that only timed out may have met loss, not a limit.
        if lossy, pair.download?.limitedBy == .timeout { pair.download?.limitedBy = .loss }
        if lossy, pair.upload?.limitedBy == .timeout { pair.upload?.limitedBy = .loss }
        if confirmation.ratio < 0.5 {
            return (confirmFailures.first ?? .timeout, "\(ok) of \(confirmation.sent) confirmation probes passed")
        }
        return nil
    }
}
