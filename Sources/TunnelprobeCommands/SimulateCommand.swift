import Base
import EngineModels
import Fates
import ArgumentParser
import FEC
import Foundation
import TraceAnalysis
import LinkSim
import Reports
import Synchronization
import Results

struct SimulateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Which FEC level suits a path: FEC + ARQ replayed against real fates or a loss model.",
        discussion: """
        Every packet the simulated sender emits (original, repair symbol, retransmission) takes the channel's
        next opportunity and meets its fate. Levels: none, conservative (8+2), balanced (12+3), aggressive (16+7),
        or k:m (UDPspeeder's x:y). Writes simulate.json and simulate.md (docs/SIMULATE.md).

        Examples:
          tunnelprobe simulate --fates reports/<run>/fates.json
          tunnelprobe simulate --model ge:p=0.01,r=0.3,h=0.2 --levels none,balanced,10:4 --runs 10 --seed 7
        """
    )

    @Option(help: "Fates file (tunnelprobe.fates/1) from `trace --export-fates` or `path --export-fates`.")
    var fates: String?

    @Option(help: "A capture (pcap or pcapng): the trace analysis runs first and its fates are simulated.")
    var pcap: String?

    @Option(help: "With --pcap: seconds after which an unanswered query counts as lost (RFC 7680 Tmax).")
    var pcapTmax: Double = 5

    @Option(help: "Loss model instead of fates: bernoulli:p=P or ge:p=P,r=R,h=H (plus delay=MS, rate=PER_S).")
    var model: String?

    @Option(help: "FEC levels to compare, comma-separated: none, conservative, balanced, aggressive, k:m (Reed-Solomon), rq:k:m (RaptorQ reception model).")
    var levels: String = "none,conservative,balanced,aggressive"

    @Option(help: "Flush timeout in ms for every FEC level (default: the preset's own; 20 for k:m).")
    var flushTimeout: Double?

    @Option(help: "Direction that carries the data and its FEC: download, upload or both.")
    var direction: SimulationRequest.Transfer = .download

    @Option(help: "Traffic: bulk, bulk:rate=R, cbr:rate=R[,size=B], interactive:burst=N,gap=MS[,size=B].")
    var traffic: String = "bulk"

    @Option(help: "Resolver whose streams to use (default: the one with the most fates).")
    var resolver: String?

    @Option(help: "Channel opportunities per run (default: one pass of the trace, 100000 for a model).")
    var opportunities: Int?

    @Option(help: "Runs per level, each with seed + i and a different offset into the trace.")
    var runs: Int = 5

    @Option(help: "Seed for models, traffic and payloads; random when absent, always reported.")
    var seed: UInt64?

    @Option(help: "Payload bytes per packet and per repair symbol (default 512, or the engine's frame with --engine).")
    var symbolSize: Int?

    @Option(help: "Tunnel framing bytes on every datagram (default 14, or the engine's frame header with --engine).")
    var headerBytes: Int?

    @Option(help: "Size symbols and headers as this engine's data frames, the units its FEC groups: masterdnsvpn (Go) or masterdnsvpn-python. Needs --mtu.")
    var engine: Engine?

    @Option(help: "With --engine: the engine's MTU in the data direction, as `scan` gives it (MAX_DOWNLOAD_MTU for download, MAX_UPLOAD_MTU for upload).")
    var mtu: Int?

    @Option(help: "Bytes per ACK or NACK entry in a feedback message.")
    var feedbackEntryBytes: Int = 2

    @Option(help: "Your own cap on bytes on the wire per useful byte: levels above it are never recommended (default: no cap; goodput already pays for overhead). The report says when it changed the answer.")
    var overheadBudget: Double?

    @Option(help: "Groups per run and level encoded and rebuilt through ISA-L and compared byte for byte.")
    var verifyGroups: Int = 200

    @Flag(help: "FEC alone: no retransmissions.")
    var noArq = false

    @Option(help: "ARQ window (originals in flight).") var window: Int = ARQConfiguration().window
    @Option(help: "Retransmissions before giving up on a packet.") var retries: Int = ARQConfiguration().retryLimit
    @Option(help: "Initial RTO in ms (RFC 6298 2.1).") var rtoInitial: Double = ARQConfiguration().initialRTOMs
    @Option(help: "Smallest RTO in ms.") var rtoMin: Double = ARQConfiguration().minRTOMs
    @Option(help: "Largest RTO in ms.") var rtoMax: Double = ARQConfiguration().maxRTOMs
    @Option(help: "RTO backoff factor per retransmission.") var rtoBackoff: Double = ARQConfiguration().backoffFactor
    @Option(help: "ms a gap waits before its first NACK.") var nackDelay: Double = ARQConfiguration().nackDelayMs
    @Option(help: "ms before the same gap is NACKed again.") var nackRepeat: Double = ARQConfiguration().nackRepeatMs
    @Option(help: "Largest gap that triggers NACKs (0: no NACKs).") var nackMaxGap: Int = ARQConfiguration().nackMaxGap
    @Option(help: "Least ms between feedback messages.") var ackInterval: Double = ARQConfiguration().ackIntervalMs

    @Option(help: "Report directory (default reports/<run-id>).")
    var out: String?

    @OptionGroup var common: CommonOptions

    func run() throws {
        let run = CommandRun(kind: "simulate", out: out)
        let request = try buildRequest()
        let seed = request.seed
        let interruption = run.interruption
        let progress = common.showsProgress ? ElapsedLine("simulate", plannedSeconds: nil) : nil
        let outcome = run.measure {
            Result { () throws(SimulationError) in try Simulation.run(request, isCancelled: { interruption.happened }) }
        }
        progress?.finish()
        let result: SimulationResult
        switch outcome {
        case .success(let value):
            result = value
        case .failure(let error):
            if case .unknownResolver = error { throw fail("--resolver \(request.resolver ?? ""): \(error)", Exit.badInput) }
            throw fail("\(error)", Exit.badInput)
        }
        let report = SimulateReport(result, run: run.info(seed: seed))
        let json = try ReportWriter.json(report)
        let summary = report.recommendations.map { "\($0.direction): recommend \($0.level). \($0.reason)" } + [
            "ISA-L: \(report.isal.groupsVerified) groups rebuilt and compared, \(report.isal.mismatches) mismatch(es)",
            "report: \(run.directory)/simulate.md",
        ]
        try run.finish(json: json, files: [("simulate.json", json), ("simulate.md", report.markdown())],
                       summary: summary.joined(separator: "\n"), common: common, recomputable: true)
        try run.exitStatus(failed: report.isal.mismatches > 0)
    }

    /// Every flag checked, every file read; any problem is one error line and exit 66.
    func buildRequest() throws -> SimulationRequest {
        var request = SimulationRequest(source: try source())
        if let flushTimeout, !(flushTimeout > 0 && flushTimeout <= 60_000) {
            throw fail("--flush-timeout must be in (0, 60000] ms", Exit.badInput)
        }
        do { request.levels = try FECLevel.parseList(levels, flushTimeoutMs: flushTimeout) } catch {
            throw fail("--levels: \(error)", Exit.badInput)
        }
        request.direction = direction
        do { request.traffic = try TrafficPattern.parse(traffic) } catch { throw fail("--traffic \(traffic): \(error)", Exit.badInput) }
        request.resolver = resolver
        request.opportunities = opportunities
        request.runs = runs
        request.seed = seed ?? UInt64.random(in: 0...UInt64.max)
        request.symbolSize = symbolSize ?? 512
        request.headerBytes = headerBytes ?? 14
        if let frame = try engineFrame(direction: direction) {
            guard symbolSize == nil, headerBytes == nil else {
                throw fail("--engine sets the symbol size and header bytes: drop --symbol-size and --header-bytes", Exit.badInput)
            }
            request.symbolSize = frame.frame.payload
            request.headerBytes = frame.frame.header
            request.frameSource = frame.source
        }
        request.feedbackEntryBytes = feedbackEntryBytes
        request.overheadBudget = overheadBudget
        request.verifyGroups = verifyGroups
        request.arq = arq
        do { try request.validate() } catch { throw fail(Self.line(for: error), Exit.badInput) }
        return request
    }

    /// `--fates`, `--pcap` (the capture through the trace analysis, docs/TRACE.md) or `--model`.
    func source() throws -> SimulationRequest.Source {
        switch (fates, pcap, model) {
        case (nil, nil, nil):
            throw fail("give --fates FILE, --pcap FILE or --model SPEC", Exit.badInput)
        case let (file?, nil, nil):
            do { return .fates(try FateTrace.load(path: file), file: file, sha256: FileDigest.sha256(path: file) ?? "") } catch {
                throw fail("\(error)", Exit.badInput)
            }
        case let (nil, capture?, nil):
            let hash = FileDigest.sha256(path: capture)
            do { return .fates(try FateTrace(capture: capture, tmaxSeconds: pcapTmax, sha256: hash), file: capture, sha256: hash ?? "") } catch {
                throw fail("\(error)", Exit.badInput)
            }
        case let (nil, nil, spec?):
            do { return .model(try LossModel.parse(spec)) } catch { throw fail("--model \(spec): \(error)", Exit.badInput) }
        default:
            throw fail("give one of --fates, --pcap and --model", Exit.badInput)
        }
    }

    /// The ARQ flags.
    var arq: ARQConfiguration {
        var arq = ARQConfiguration()
        arq.enabled = !noArq
        arq.window = window
        arq.retryLimit = retries
        arq.initialRTOMs = rtoInitial
        arq.minRTOMs = rtoMin
        arq.maxRTOMs = rtoMax
        arq.backoffFactor = rtoBackoff
        arq.nackDelayMs = nackDelay
        arq.nackRepeatMs = nackRepeat
        arq.nackMaxGap = nackMaxGap
        arq.ackIntervalMs = ackInterval
        return arq
    }

    /// The line for a setting the simulator refuses, under the flag that set it.
    static func line(for error: SimulationRequestError) -> String {
        switch error.setting {
        case .opportunities: "--opportunities must be \(error.allowed)"
        case .runs: "--runs must be \(error.allowed)"
        case .symbolSize: "--symbol-size must be \(error.allowed)"
        case .headerBytes, .feedbackEntryBytes: "--header-bytes must be 0...1000 and --feedback-entry-bytes 0...100"
        case .overheadBudget: "--overhead-budget must be \(error.allowed)"
        case .verifyGroups: "--verify-groups must be \(error.allowed)"
        case .window: "--window must be \(error.allowed)"
        case .retryLimit: "--retries must be \(error.allowed)"
        case .rto: "RTO must satisfy 0 < --rto-min <= --rto-max <= 3600000 ms and --rto-initial > 0"
        case .backoffFactor: "--rto-backoff must be \(error.allowed)"
        case .feedbackTiming: "--nack-delay and --ack-interval must be >= 0 ms, --nack-repeat > 0 ms"
        case .nackMaxGap: "--nack-max-gap must be \(error.allowed)"
        }
    }

    /// `--engine E --mtu N`: the engine model's data frame in the data direction (upload frames when
    /// only upload carries data), and a line saying so for the report.
    func engineFrame(direction: SimulationRequest.Transfer) throws -> (frame: DataFrame, source: String)? {
        guard let engine else {
            if mtu != nil { throw fail("--mtu goes with --engine", Exit.badInput) }
            return nil
        }
        guard let mtu, mtu > 0 else { throw fail("--engine needs --mtu (the engine's MTU in the data direction)", Exit.badInput) }
        let upload = direction == .upload
        guard let frame = EngineCatalog.model(for: engine).dataFrame(mtu: mtu, upload: upload) else {
            throw fail("--engine \(engine.rawValue): the \(engine.displayName) model has no frame layout; give --symbol-size and --header-bytes", Exit.badInput)
        }
        let which = upload ? "upload" : "download"
        return (frame, "\(engine.rawValue) \(which) frames at MTU \(mtu): \(frame.payload) B payload + \(frame.header) B header")
    }
}
