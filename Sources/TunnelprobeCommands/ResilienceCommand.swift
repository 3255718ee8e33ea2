import ArgumentParser
import Foundation
import Reports
import TunnelVerify
import Results

struct ResilienceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resilience",
        abstract: "Bring a real tunnel engine up and down, disrupt it under a steady probe flow, and measure recovery.",
        discussion: """
        In one sandbox (as `verify` makes it): --cycles N engine starts and stops, each timed to the \
        handshake and the first data, with proof that nothing accumulated; then each scenario while \
        one HTTP GET every 100 ms crosses the tunnel (through the engine's SOCKS5 proxy with \
        --socks): uplink down for each --outage length, uplink address change, resolver outage, \
        engine killed and restarted. Recovery time, lost probes, reconnect attempts and leaks \
        (uplink capture) per scenario. SIGINT restores the uplink, removes the sandbox and writes \
        the partial report. Writes resilience.json and resilience.md with one probes-<scenario>.csv \
        and uplink pcap per scenario.

        Example (in the lab):
          tunnelprobe lab exec -- tunnelprobe resilience --profile family.json \\
            --whoami-url http://198.18.2.2/ --cycles 5 --outage 1,5,30
        """
    )

    @Option(help: "The iOS client's profile JSON.")
    var profile: String

    @OptionGroup var engineOptions: EngineOptions

    @Option(help: "HTTP endpoint (http://IP[:port]/path) reached through the tunnel by the probe flow.")
    var whoamiURL: String

    @Option(help: "Engine up/down cycles before the scenarios.")
    var cycles: Int = 0

    @Option(help: "Scenarios, comma-separated: uplink-down, address-change, resolver-outage, engine-restart (default all; none with --scenarios none).")
    var scenarios: ChoiceList<DisruptionKind>?

    @Option(help: "Outage lengths in seconds for uplink-down and resolver-outage, comma-separated.")
    var outage: String = "1,5"

    @Option(help: "Seconds after a disruption within which traffic must flow again.")
    var recoveryBound: Double = 30

    @Option(help: "Milliseconds between the probes of the steady flow (20 to 10000).")
    var probeInterval: Int = 100

    @Option(help: "Seconds one engine start may take up to the first data.")
    var deadline: Double = 25

    @Option(help: "Apply these split routes instead of the profile's (\"include P1,P2\" or \"exclude P1\"), to show that misrouting is caught.")
    var applySplit: String?

    @Option(help: "Seed (reported; the runs draw no random numbers that change the measurement).")
    var seed: UInt64?

    @Option(help: "Report directory (default reports/<run-id>).")
    var out: String?

    @Option(help: "Directory of the sandboxes' state (for verify --cleanup).")
    var stateRoot: String = "/run/tunnelprobe/verify"

    @OptionGroup var common: CommonOptions

    func run() async throws {
        SandboxRun.trapSignalsEarly()
        let parsed: Profile
        do { parsed = try Profile.load(path: profile) } catch { throw fail("\(profile): \(error)", Exit.badInput) }
        let kind = try engineOptions.kind(for: parsed)
        guard let url = WhoamiURL(whoamiURL) else { throw fail("--whoami-url \(whoamiURL): use http://IP[:port]/path", .validationFailure) }
        let overrides = try engineOptions.checkedOverrides(for: kind)
        var configuration = ResilienceConfiguration(profile: parsed, engine: kind, overrides: overrides, whoami: url,
                                                    seed: seed ?? UInt64.random(in: 0...UInt64.max))
        guard (0...100).contains(cycles) else { throw fail("--cycles must be in 0...100", .validationFailure) }
        configuration.cycles = cycles
        configuration.disruptions = scenarios?.values ?? DisruptionKind.allCases
        var outages: [Duration] = []
        for text in outage.split(separator: ",") {
            guard let value = Double(text), value > 0, value <= 600 else { throw fail("--outage \(text): seconds in (0, 600]", .validationFailure) }
            outages.append(.milliseconds(Int64(value * 1000)))
        }
        guard !outages.isEmpty else { throw fail("--outage needs at least one length", .validationFailure) }
        configuration.outages = outages
        guard recoveryBound > 0, recoveryBound <= 600 else { throw fail("--recovery-bound must be in (0, 600] seconds", .validationFailure) }
        configuration.recoveryBound = .milliseconds(Int64(recoveryBound * 1000))
        guard (20...10_000).contains(probeInterval) else { throw fail("--probe-interval must be 20 to 10000 ms", .validationFailure) }
        configuration.probeInterval = .milliseconds(probeInterval)
        guard deadline > 0, deadline <= 600 else { throw fail("--deadline must be in (0, 600] seconds", .validationFailure) }
        configuration.deadline = .milliseconds(Int64(deadline * 1000))
        configuration.stateRoot = stateRoot
        if let socks = overrides.socks { configuration.socks = socks }
        if let applySplit {
            let words = applySplit.split(separator: " ")
            let written = words.dropFirst().flatMap { $0.split(separator: ",") }.map(String.init)
            guard words.count == 2, let mode = Profile.Split.Mode(rawValue: String(words[0])), !written.isEmpty else {
                throw fail("--apply-split \(applySplit): use \"include|exclude ENTRY[,ENTRY...]\" (prefixes or domain names)", .validationFailure)
            }
            var entries: [String] = []
            for text in written {
                switch Profile.Split.entry(text) {
                case .success(let entry): entries.append(entry)
                case .failure(let problem): throw fail("--apply-split: \(problem)", .validationFailure)
                }
            }
            guard parsed.split != nil else { throw fail("--apply-split needs a profile with a split", .validationFailure) }
            configuration.appliedSplit = Profile.Split(mode: mode, entries: entries)
        }
        try await Self.execute(configuration, out: out, common: common)
    }

    /// Preflight, run under the signal trap, write resilience.json/.md (also when interrupted).
    static func execute(_ configuration: ResilienceConfiguration, out: String?, common: CommonOptions) async throws {
        try await SandboxRun.preflight { () async throws(VerifyError) in try await configuration.preflight() }
        try await SandboxRun.execute(kind: "resilience", seed: configuration.seed, out: out, common: common) {
            directory throws(VerifyError) in
            var configuration = configuration
            configuration.directory = directory
            return try await Resilience.run(configuration)
        }
    }
}
