public import ArgumentParser
import Base
public import Impairment
import Results

/// The flags of `tunnelprobe impair`, also read from `lab up --impair "FLAGS"`. X is `up` (queries)
/// or `down` (responses); each direction has the same set. `config(requireEndpoints:)` turns them into
/// an `ImpairmentConfig` and checks it, naming the flag of any problem.
public struct ImpairOptions: ParsableArguments {
    public init() {}

    @Option(help: ArgumentHelp("Where clients send (required).", valueName: "ip:port"))
    var listen: String?

    @Option(help: ArgumentHelp("The resolver to forward to (required).", valueName: "ip:port"))
    var upstream: String?

    @Option(help: "Seed of every random choice.")
    var seed: UInt64 = 1

    @Option(help: ArgumentHelp("One JSON line per datagram (docs/IMPAIR.md).", valueName: "file"))
    var log: String?

    @Option(help: ArgumentHelp("Queries: Bernoulli loss.", valueName: "p")) var upLoss: Double?
    @Option(help: ArgumentHelp("Responses: Bernoulli loss.", valueName: "p")) var downLoss: Double?
    @Option(help: ArgumentHelp("Queries: Gilbert-Elliott loss (docs/IMPAIR.md).", valueName: "p=,r=[,h=][,k=]")) var upGe: String?
    @Option(help: ArgumentHelp("Responses: Gilbert-Elliott loss.", valueName: "p=,r=[,h=][,k=]")) var downGe: String?
    @Option(help: ArgumentHelp("Queries: one-way delay.", valueName: "ms")) var upDelay: Double?
    @Option(help: ArgumentHelp("Responses: one-way delay.", valueName: "ms")) var downDelay: Double?
    @Option(help: ArgumentHelp("Queries: uniform +-ms around the delay, FIFO.", valueName: "ms")) var upJitter: Double?
    @Option(help: ArgumentHelp("Responses: uniform +-ms around the delay, FIFO.", valueName: "ms")) var downJitter: Double?
    @Option(help: ArgumentHelp("Queries: hold one until GAP (1) later ones have left.", valueName: "p[:gap]")) var upReorder: String?
    @Option(help: ArgumentHelp("Responses: hold one until GAP (1) later ones have left.", valueName: "p[:gap]")) var downReorder: String?
    @Option(help: ArgumentHelp("Queries: a second copy.", valueName: "p")) var upDuplicate: Double?
    @Option(help: ArgumentHelp("Responses: a second copy.", valueName: "p")) var downDuplicate: Double?
    @Option(help: ArgumentHelp("Queries: token-bucket shaper, datagrams/s.", valueName: "pps")) var upRate: Double?
    @Option(help: ArgumentHelp("Responses: token-bucket shaper, datagrams/s.", valueName: "pps")) var downRate: Double?
    @Option(help: ArgumentHelp("Queries: back-to-back datagrams (default 1).", valueName: "n")) var upRateBurst: Int?
    @Option(help: ArgumentHelp("Responses: back-to-back datagrams (default 1).", valueName: "n")) var downRateBurst: Int?
    @Option(help: ArgumentHelp("Queries: datagrams that may wait (default 100).", valueName: "n")) var upRateQueue: Int?
    @Option(help: ArgumentHelp("Responses: datagrams that may wait (default 100).", valueName: "n")) var downRateQueue: Int?
    @Option(help: ArgumentHelp("Queries over --up-rate: drop (default) or refuse (answer REFUSED, as a public resolver's per-client limit does); with --up-rate-queue 0 the shaper polices.", valueName: "drop|refuse")) var upRateExcess: DirectionConfig.RateExcess?
    @Option(name: .customLong("up-max-qname"), help: ArgumentHelp("Queries: drop QNAMEs longer than n characters.", valueName: "n")) var upMaxQName: Int?
    @Option(name: .customLong("down-max-qname"), help: ArgumentHelp("Responses: drop QNAMEs longer than n characters.", valueName: "n")) var downMaxQName: Int?
    @Option(help: ArgumentHelp("Queries: act on datagrams over n bytes.", valueName: "n")) var upMaxSize: Int?
    @Option(help: ArgumentHelp("Responses: act on datagrams over n bytes.", valueName: "n")) var downMaxSize: Int?
    @Option(help: ArgumentHelp("Queries: what happens over --up-max-size (drop only).", valueName: "drop")) var upOversize: DirectionConfig.Oversize?
    @Option(help: ArgumentHelp("Responses: over --down-max-size, drop or truncate (question + TC).", valueName: "drop|truncate")) var downOversize: DirectionConfig.Oversize?

    @Option(help: ArgumentHelp("Answer queries SERVFAIL from the relay.", valueName: "p"))
    var servfail: Double?

    @Option(help: ArgumentHelp("Replay a fates file (docs/FATES.md).", valueName: "file"))
    var replay: String?

    @Option(help: ArgumentHelp("Whose streams to replay (default: the first).", valueName: "ip:port"))
    var replayResolver: String?

    @Option(help: ArgumentHelp("Close idle client sockets after this many seconds.", valueName: "s"))
    var mappingIdle: Double?

    @Option(help: ArgumentHelp("Datagrams per recvmmsg.", valueName: "n"))
    var vectorReads: Int?

    /// The flag that sets `setting` in `direction` (the name a problem is reported under).
    static func flag(_ setting: ImpairmentConfigError.Setting, _ direction: Direction?) -> String {
        let x = "--\(direction?.rawValue ?? "up")-"
        switch setting {
        case .listen: return "--listen"
        case .upstream: return "--upstream"
        case .listenAndUpstream: return "--listen/--upstream"
        case .seed: return "--seed"
        case .log: return "--log"
        case .servfail: return "--servfail"
        case .replay: return "--replay"
        case .replayResolver: return "--replay-resolver"
        case .mappingIdle: return "--mapping-idle"
        case .vectorReads: return "--vector-reads"
        case .loss: return x + "loss"
        case .gilbertElliott: return x + "ge"
        case .lossModel: return "\(x)loss/\(x)ge"
        case .delay: return x + "delay"
        case .jitter: return x + "jitter"
        case .reorder: return x + "reorder"
        case .duplicate: return x + "duplicate"
        case .rate: return x + "rate"
        case .rateBurst: return x + "rate-burst"
        case .rateQueue: return x + "rate-queue"
        case .rateExcess: return x + "rate-excess"
        case .maxQName: return x + "max-qname"
        case .maxSize: return x + "max-size"
        case .oversize: return x + "oversize"
        case .replayAndModel: return "--replay/\(x)*"
        }
    }

    /// One line: the flag, then why.
    public static func message(_ error: ImpairmentConfigError) -> String { "\(flag(error.setting, error.direction)): \(error.reason)" }

    /// The configuration these flags describe, checked. Without `requireEndpoints` (`lab up
    /// --impair`, where the lab supplies them) the endpoints may be absent and get placeholders.
    public func config(requireEndpoints: Bool = true) throws(ImpairmentConfigError) -> ImpairmentConfig {
        func endpoint(_ text: String?, _ setting: ImpairmentConfigError.Setting, placeholder: UInt32) throws(ImpairmentConfigError) -> Endpoint {
            guard let text else {
                if requireEndpoints { throw ImpairmentConfigError(setting, "required") }
                return Endpoint(address: .v4(placeholder), port: 53)
            }
            do {
                // Port 0 on --listen binds an ephemeral port (tests, benchmarks).
                return try Endpoint(parsing: text, defaultPort: nil, allowZeroPort: setting == .listen)
            } catch {
                throw ImpairmentConfigError(setting, "\"\(text)\" is not a numeric ip:port or [IPv6]:port (\(error))")
            }
        }
        var config = ImpairmentConfig(listen: try endpoint(listen, .listen, placeholder: 0xC000_0201),
                                      upstream: try endpoint(upstream, .upstream, placeholder: 0xC000_0202), seed: seed,
                                      logPath: log, servfail: servfail ?? 0, replayPath: replay, replayResolver: replayResolver)
        if let mappingIdle { config.mappingIdleSeconds = mappingIdle }
        if let vectorReads { config.vectorReads = vectorReads }
        config.up = try direction(.up, loss: upLoss, ge: upGe, delay: upDelay, jitter: upJitter, reorder: upReorder,
                                  duplicate: upDuplicate, rate: upRate, burst: upRateBurst, queue: upRateQueue,
                                  maxQName: upMaxQName, maxSize: upMaxSize, oversize: upOversize)
        if let upRateExcess { config.up.rateExcess = upRateExcess }
        config.down = try direction(.down, loss: downLoss, ge: downGe, delay: downDelay, jitter: downJitter, reorder: downReorder,
                                    duplicate: downDuplicate, rate: downRate, burst: downRateBurst, queue: downRateQueue,
                                    maxQName: downMaxQName, maxSize: downMaxSize, oversize: downOversize)
        try config.validate()
        return config
    }

    private func direction(_ d: Direction, loss: Double?, ge: String?, delay: Double?, jitter: Double?, reorder: String?,
                           duplicate: Double?, rate: Double?, burst: Int?, queue: Int?, maxQName: Int?, maxSize: Int?,
                           oversize: DirectionConfig.Oversize?) throws(ImpairmentConfigError) -> DirectionConfig {
        var c = DirectionConfig()
        if let loss { c.loss = .bernoulli(loss) }
        if let ge {
            guard c.loss == nil else { throw ImpairmentConfigError(.lossModel, d, "choose one loss model per direction") }
            do {
                c.loss = .gilbertElliott(try GilbertElliottParameters(text: ge))
            } catch {
                throw ImpairmentConfigError(.gilbertElliott, d, error.reason)
            }
        }
        if let delay { c.delayMs = delay }
        if let jitter {
            c.jitterMs = jitter
            if delay == nil { throw ImpairmentConfigError(.jitter, d, "needs a delay above 0 (jitter varies a delay)") }
        }
        if let reorder {
            let parts = reorder.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2, let p = Double(parts[0]), let gap = parts.count == 2 ? Int(parts[1]) : 1 else {
                throw ImpairmentConfigError(.reorder, d, "\"\(reorder)\" is not P or P:GAP")
            }
            c.reorder = Reordering(probability: p, gap: gap)
        }
        if let duplicate { c.duplicate = duplicate }
        c.rate = rate
        if let burst {
            guard rate != nil else { throw ImpairmentConfigError(.rateBurst, d, "needs a rate") }
            c.rateBurst = burst
        }
        if let queue {
            guard rate != nil else { throw ImpairmentConfigError(.rateQueue, d, "needs a rate") }
            c.rateQueue = queue
        }
        c.maxQName = maxQName
        c.maxSize = maxSize
        if let oversize {
            guard maxSize != nil else { throw ImpairmentConfigError(.oversize, d, "needs a size limit") }
            c.oversize = oversize
        }
        return c
    }
}
