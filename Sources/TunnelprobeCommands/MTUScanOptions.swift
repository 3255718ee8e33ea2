import ArgumentParser
import EngineModels
import NIOCore
import ProbeClient
import Results

/// The MTU-scan flags `scan` and `sweep` share (the staged scan of `Scanner.scanPair` runs in both):
/// one option group, so both take the same names, defaults and checks. `--concurrency` stays in
/// each command: its default differs (256 pairs for a scan, 64 for the scans a sweep starts).
struct MTUScanOptions: ParsableArguments {
    @Option(help: "Seconds to wait for each answer (a sweep waits this long after its last probe).")
    var timeout: Double = 2.0

    @Option(help: "Tries per size when a probe times out or gets SERVFAIL.")
    var attempts: Int = 2

    @Option(help: "Queries per second sent to any one resolver in the MTU scan (0 = no pacing).")
    var perResolverQps: Double = 100

    @Flag(help: "Send up to --concurrency queries at once whatever is lost, without the scan-wide congestion window (AIMD on the queries in flight: it halves when answers that should come are lost, so the scan's own load is never read as a size limit); a sweep's own probes are paced by --rate either way.")
    var noCongestionControl = false

    @Option(help: "Confirmation probes per direction at the chosen sizes.")
    var confirm: Int = 3

    @Option(help: "Largest confirmation loss ratio (0-1) of a pair the exports and the synced MTU take; above it the pair is flagged and left out (default 0.2: with 3 confirmation probes per direction one lost probe passes, two do not).")
    var maxLoss: Double = ScanConfiguration.defaultMaxLoss

    @Option(help: "Engines to give figures for, comma-separated: masterdnsvpn (the Go edition), masterdnsvpn-python, dnstt, slipstream, iodine, or all.")
    var engine: EngineList = .all

    func validate() throws {
        guard timeout > 0, timeout <= 60 else { throw ValidationError("--timeout must be in (0, 60] seconds") }
        guard (1...10).contains(attempts) else { throw ValidationError("--attempts must be 1...10") }
        guard perResolverQps >= 0 else { throw ValidationError("--per-resolver-qps must be 0 or more") }
        guard (0...100).contains(confirm) else { throw ValidationError("--confirm must be 0...100") }
        guard (0...1).contains(maxLoss) else { throw ValidationError("--max-loss must be in 0...1") }
    }

    /// The engines `--engine` names, in order (`all`: every model).
    var engines: [Engine] { engine.engines }

    /// The pacer of `--per-resolver-qps`; nil for 0 (no pacing).
    var pacer: Pacer? { perResolverQps > 0 ? Pacer(queriesPerSecond: perResolverQps) : nil }

    /// These flags written into `configuration`, with the run's seed and `--concurrency`.
    func apply(to configuration: inout ScanConfiguration, concurrency: Int, seed: UInt64) {
        configuration.timeout = .milliseconds(Int64(timeout * 1000))
        configuration.attempts = attempts
        configuration.concurrency = concurrency
        configuration.perResolverQPS = perResolverQps
        configuration.confirmProbes = confirm
        configuration.seed = seed
        configuration.maxLoss = maxLoss
        configuration.congestionControl = !noCongestionControl
    }
}

/// `--engine a,b,...` or `all`: engines by the names `Engine(name:)` takes, in the order given, each
/// once. A name it does not know refuses the whole value, with the names it takes.
struct EngineList: ExpressibleByArgument, Equatable {
    let engines: [Engine]
    private let text: String

    static let all = EngineList(engines: Engine.allCases, text: "all")

    private init(engines: [Engine], text: String) {
        self.engines = engines
        self.text = text
    }

    init?(argument: String) {
        if argument.trimmingCharacters(in: .whitespaces).lowercased() == "all" {
            self = .all
            return
        }
        let parsed = EngineCatalog.parse(argument)
        guard parsed.unknown.isEmpty, !parsed.engines.isEmpty else { return nil }
        self.init(engines: parsed.engines, text: argument)
    }

    static var allValueStrings: [String] { ["masterdnsvpn", "masterdnsvpn-python", "dnstt", "slipstream", "iodine", "all"] }

    var defaultValueDescription: String { text }
}
