import ArgumentParser
import DNSWire
import Foundation
import ProbeProtocol
import Reports
import TunnelVerify

struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Start a real tunnel engine over TUN in a sandbox and check handshake, exit IP and leaks.",
        discussion: """
        Creates its own network namespace joined to this one by a veth pair with NAT, starts the \
        engine there, and goes through the phases engine -> tun -> routes -> handshake -> data -> \
        checks, each with a deadline. The uplink is captured with libpcap: every packet that is not \
        the tunnel's carrier is itemized. Everything is removed afterwards (also on SIGINT/SIGTERM); \
        `verify --cleanup` removes what a hard-killed run left. Writes verify.json and verify.md.

        Example (in the lab: tunnelprobe lab up --tunnel-domain t.lab.test):
          tunnelprobe lab exec -- tunnelprobe verify --profile family.json \\
            --whoami-url http://198.18.2.2/ --password-file /run/tunnelprobe/labs/default/iodine.password
        """
    )

    @Option(help: "The iOS client's profile JSON.")
    var profile: String?

    @OptionGroup var engineOptions: EngineOptions

    @Option(help: "HTTP endpoint (http://IP[:port]/path) that answers with the caller's address.")
    var whoamiURL: String?

    @Option(help: "Seconds each phase up to the handshake may take.")
    var deadline: Double = 25

    @Option(help: "Checks to run, comma-separated: exitIP,dnsLeak,ipv6Leak,tunnelFailure (default all).")
    var checks: ChoiceList<VerifyCheck>?

    @Flag(help: "Leave the carrier addresses inside the tunnel's routes (to demonstrate a route loop).")
    var noCarrierExclusion = false

    @Option(help: "Zone under which the DNS leak check makes unique names.")
    var leakDomain: String = "leak.tunnelprobe.invalid"

    @Option(help: "The responder's zone whose leak zone records which resolver asked (needs --leak-key-file).")
    var leakZone: String?

    @Option(help: "The responder's key file, for --leak-zone.")
    var leakKeyFile: String?

    @Option(name: .customLong("expected-resolver"), help: "A resolver allowed to ask for the leak names (repeatable); any other is a leak.")
    var expectedResolvers: [String] = []

    @Option(help: "Bring the engine up and down N times in one sandbox (handshake and first-data times per cycle, leftovers proven absent); writes resilience.json. Needs --whoami-url.")
    var cycles: Int?

    @Flag(help: "Remove every sandbox a killed run left behind, then exit.")
    var cleanup = false

    @Flag(help: "Print the engine's config normalized from the profile (MasterDnsVPN: client_config.toml, key hidden, and its resolver file), run nothing, exit.")
    var printConfig = false

    @Option(help: "Seed for the random names; random when absent, always reported.")
    var seed: UInt64?

    @Option(help: "Report directory (default reports/<run-id>).")
    var out: String?

    @Option(help: "Directory of the sandboxes' state (for --cleanup).")
    var stateRoot: String = "/run/tunnelprobe/verify"

    @OptionGroup var common: CommonOptions

    func run() async throws {
        if cleanup {
            do {
                for line in try await Sandbox.cleanup(stateRoot: stateRoot) where !common.quiet { printOut(line) }
            } catch {
                throw fail(error.message, error.code == .notRoot ? Exit.noPermission : Exit.environment)
            }
            return
        }
        SandboxRun.trapSignalsEarly()
        guard let profilePath = profile else { throw fail("--profile is required", .validationFailure) }
        let parsed: Profile
        do { parsed = try Profile.load(path: profilePath) } catch { throw fail("\(profilePath): \(error)", Exit.badInput) }
        let kind = try engineOptions.kind(for: parsed)
        let overrides = try engineOptions.checkedOverrides(for: kind)
        if printConfig {
            do {
                printOut(try EngineConfigText.normalized(profile: parsed, engine: kind, overrides: overrides), terminator: "")
            } catch {
                throw fail("\(profilePath): \(error)", Exit.badInput)
            }
            return
        }
        var whoami: WhoamiURL?
        if let whoamiURL {
            guard let url = WhoamiURL(whoamiURL) else { throw fail("--whoami-url \(whoamiURL): use http://IP[:port]/path", .validationFailure) }
            whoami = url
        }
        let seed = seed ?? UInt64.random(in: 0...UInt64.max)
        let socksEndpoint = overrides.socks
        if let cycles {
            guard (1...100).contains(cycles) else { throw fail("--cycles must be in 1...100", .validationFailure) }
            guard let whoami else { throw fail("--cycles needs --whoami-url (first data is timed through it)", .validationFailure) }
            var cycling = ResilienceConfiguration(profile: parsed, engine: kind, overrides: overrides, whoami: whoami, seed: seed)
            cycling.cycles = cycles
            guard deadline > 0, deadline <= 600 else { throw fail("--deadline must be in (0, 600] seconds", .validationFailure) }
            cycling.deadline = .milliseconds(Int64(deadline * 1000))
            cycling.stateRoot = stateRoot
            if let socksEndpoint { cycling.socks = socksEndpoint }
            try await ResilienceCommand.execute(cycling, out: out, common: common)
            return
        }
        var configuration = VerifyConfiguration(profile: parsed, engine: kind, overrides: overrides, whoami: whoami, seed: seed)
        guard deadline > 0, deadline <= 600 else { throw fail("--deadline must be in (0, 600] seconds", .validationFailure) }
        configuration.deadline = .milliseconds(Int64(deadline * 1000))
        configuration.excludeCarriers = !noCarrierExclusion
        configuration.leakDomain = leakDomain
        configuration.stateRoot = stateRoot
        configuration.expectedResolvers = expectedResolvers
        if let socksEndpoint { configuration.socks = socksEndpoint }
        if let leakZone {
            guard let leakKeyFile else { throw fail("--leak-zone needs --leak-key-file", .validationFailure) }
            let zone: DNSName
            do { zone = try DNSName(leakZone) } catch { throw fail("--leak-zone \(leakZone): \(error)", .validationFailure) }
            let key = try loadProbeKey(leakKeyFile)
            configuration.leakZone = LeakZoneAccess(zone: zone, key: key)
        }
        if let checks { configuration.checks = Set(checks.values) }
        try await SandboxRun.preflight { () async throws(VerifyError) in try await configuration.preflight() }
        let frozen = configuration
        try await SandboxRun.execute(kind: "verify", seed: seed, out: out, common: common) { directory throws(VerifyError) in
            var configuration = frozen
            configuration.capturePath = directory + "/uplink.pcap"
            configuration.engineLogPath = directory + "/engine.log"
            return try await Verifier.run(configuration)
        }
    }
}
