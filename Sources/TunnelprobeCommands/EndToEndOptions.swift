import ArgumentParser
import Base
import Foundation
import Logging
import OSLayer
import ProbeClient
import Reports
import TunnelVerify
import Results

/// `scan --e2e`: after the probes, the real engine through each of the best accepted pairs (verify's
/// engines, through `EndToEndConfiguration`). Flags are prefixed `--e2e-` because `scan --engine`
/// already names the engines whose figures the scan gives.
struct EndToEndOptions: ParsableArguments {
    @Flag(name: .customLong("e2e"), help: "After the probes, start the real engine pinned to each of the best accepted pairs and record its handshake time, first data and a bulk download's goodput, ranked (needs root, --e2e-profile, --e2e-url).")
    var enabled = false

    @Option(name: .customLong("e2e-count"), help: "How many of the best accepted pairs to run end to end.")
    var count = 10

    @Option(name: .customLong("e2e-profile"), help: "verify's profile for the engine (its settings and password; the resolver and domain are each pair's).")
    var profile: String?

    @Option(name: .customLong("e2e-engine"), help: "Engine: iodine, masterdnsvpn, dnstt or command (default: the engine of the profile's protocol).")
    var engine: EngineKind?

    @Option(name: .customLong("e2e-domain"), help: "The engine's domain: pair (each pair's probe domain) or profile (the profile's tunnel domain through each pair's resolver, for a server that holds its own domain and key; the report says so). Default: profile for dnstt, pair for the others.")
    var domainRule: EndToEndDomain?

    @Option(name: .customLong("e2e-engine-path"), help: "The engine program, instead of looking it up on PATH (MasterDnsVPN's client is in no package: the Go edition's client, or the Python edition's client.py or its directory).")
    var enginePath: String?

    @Option(name: .customLong("e2e-engine-python"), help: "MasterDnsVPN's Python edition: the interpreter that runs it (default: python3 on PATH).")
    var enginePython: String?

    @Option(name: .customLong("e2e-password-file"), help: "File holding the engine password.")
    var passwordFile: String?

    @Option(name: .customLong("e2e-engine-command"), help: "With --e2e-engine command: the engine's command line; {tun} stands for the TUN device, {resolver} for the pair's resolver (ip:port), {resolver-ip} for its address, {resolver-url} for it with its transport (tls://…, https://…), {transport} for udp/tcp/tls/https, {domain} for its domain.")
    var engineCommand: String?

    @Option(name: .customLong("e2e-handshake-pattern"), help: "With --e2e-engine command: a regular expression whose match in the engine's log is handshake evidence.")
    var handshakePattern: String?

    @Option(name: .customLong("e2e-engine-arg"), help: "Extra argument for the engine (repeatable).")
    var engineArguments: [String] = []

    @Option(name: .customLong("e2e-socks"), help: "SOCKS5 port (host:port) of a SOCKS-shaped engine inside the sandbox.")
    var socks: String?

    @Option(name: .customLong("e2e-url"), help: "HTTP endpoint (http://IP[:port]/path) fetched through the tunnel as its first data.")
    var url: String?

    @Option(name: .customLong("e2e-bulk-url"), help: "HTTP endpoint whose answer is the bulk download (at least --e2e-bulk-bytes long).")
    var bulkURL: String?

    @Option(name: .customLong("e2e-bulk-bytes"), help: "Body bytes the bulk download reads.")
    var bulkBytes = 65_536

    @Option(name: .customLong("e2e-bulk-timeout"), help: "Seconds the bulk download may take.")
    var bulkTimeout: Double = 60

    @Option(name: .customLong("e2e-deadline"), help: "Seconds each engine phase up to the handshake may take.")
    var deadline: Double = 25

    func validate() throws {
        guard enabled else { return }
        guard (1...1000).contains(count) else { throw ValidationError("--e2e-count must be 1...1000") }
        guard profile != nil else { throw ValidationError("--e2e needs --e2e-profile (the engine's settings)") }
        guard let url, WhoamiURL(url) != nil else { throw ValidationError("--e2e needs --e2e-url http://IP[:port]/path") }
        if let bulkURL, WhoamiURL(bulkURL) == nil { throw ValidationError("--e2e-bulk-url \(bulkURL): use http://IP[:port]/path") }
        guard (1...(64 << 20)).contains(bulkBytes) else { throw ValidationError("--e2e-bulk-bytes must be 1...67108864") }
        guard bulkTimeout > 0, bulkTimeout <= 600 else { throw ValidationError("--e2e-bulk-timeout must be in (0, 600] seconds") }
        guard deadline > 0, deadline <= 600 else { throw ValidationError("--e2e-deadline must be in (0, 600] seconds") }
    }

    /// The configuration, checked before the scan starts (root, the engine's program and settings),
    /// so a scan is never run only to fail at the end. Nil without --e2e.
    func configuration(seed: UInt64) async throws -> EndToEndConfiguration? {
        guard enabled, let profilePath = profile, let url, let whoami = WhoamiURL(url) else { return nil }
        let parsed: Profile
        do { parsed = try Profile.load(path: profilePath) } catch { throw fail("--e2e-profile \(profilePath): \(error)", Exit.badInput) }
        // verify's rule: the profile's own protocol's engine (or `command`), never another protocol's.
        let kind = try EngineOptions.kind(named: engine, for: parsed)
        try EngineOptions.checkPythonEdition(kind: kind, enginePath: enginePath, python: enginePython, arguments: engineArguments,
                                             flags: ("--e2e-engine-python", "--e2e-engine-arg"))
        var overrides = EngineOverrides()
        overrides.enginePath = enginePath
        overrides.python = enginePython
        overrides.passwordFile = passwordFile
        overrides.extraArguments = engineArguments
        overrides.command = engineCommand.map { $0.split(separator: " ").map(String.init) } ?? []
        overrides.handshakePattern = handshakePattern
        let bulk = bulkURL.flatMap(WhoamiURL.init).map {
            BulkTransfer(url: $0, bytes: bulkBytes, timeout: .milliseconds(Int64(bulkTimeout * 1000)))
        }
        var configuration = EndToEndConfiguration(profile: parsed, engine: kind, overrides: overrides, whoami: whoami,
                                                  bulk: bulk, seed: seed)
        configuration.deadline = .milliseconds(Int64(deadline * 1000))
        if Self.usesProfileDomain(rule: domainRule, engine: kind) {
            guard let domain = parsed.domain else { throw fail("--e2e-domain profile: the profile \(profilePath) has no domain", .validationFailure) }
            configuration.engineDomain = domain
        }
        if let socks {
            guard let endpoint = try? Endpoint(parsing: socks, defaultPort: 1080) else { throw fail("--e2e-socks \(socks): use ip:port", .validationFailure) }
            configuration.socks = endpoint
        }
        try await SandboxRun.preflight { () async throws(VerifyError) in try await configuration.preflight() }
        return configuration
    }

    /// `--e2e-domain`: whether the engine runs on the profile's domain rather than each pair's. By
    /// default only dnstt does: dnstt-server answers only its own domain with its own key, and scan
    /// cannot probe it (`scan --server dnstt` is refused), so its pairs are measured on another domain.
    static func usesProfileDomain(rule: EndToEndDomain?, engine: EngineKind) -> Bool {
        (rule ?? (engine == .dnstt ? .profile : .pair)) == .profile
    }

    /// The pairs run end to end: the usable ones (accepted, within --max-loss), best first by
    /// download size, then upload size, then median RTT.
    static let selection = "usable pairs by download bytes, then upload bytes, then median RTT"

    static func best(_ pairs: [ScanPair], count: Int) -> [ScanPair] {
        Array(pairs.filter(\.usable).sorted { a, b in
            let (da, db) = (a.download?.bytes ?? 0, b.download?.bytes ?? 0)
            if da != db { return da > db }
            let (ua, ub) = (a.upload?.bytes ?? 0, b.upload?.bytes ?? 0)
            if ua != ub { return ua > ub }
            return (a.rttMs ?? .infinity, a.resolver) < (b.rttMs ?? .infinity, b.resolver)
        }.prefix(count))
    }

    /// Runs the engine through each chosen pair, one at a time (engines hold server-side session
    /// slots and the sandbox's addresses), until done or a signal stops it.
    func run(_ configuration: EndToEndConfiguration, pairs: [ScanPair], logger: Logger) async -> ScanEndToEnd {
        let chosen = Self.best(pairs, count: count)
        let task = Task { () -> [ScanEndToEnd.Run] in
            var runs: [ScanEndToEnd.Run] = []
            for (index, pair) in chosen.enumerated() {
                if Task.isCancelled { break }
                guard let target = pair.resolverTarget else {
                    runs.append(ScanEndToEnd.Run(resolver: pair.resolver, domain: pair.domain, error: "not an address: \(pair.resolver)"))
                    continue
                }
                if let refusal = configuration.refusal(transport: target.transport) {
                    runs.append(ScanEndToEnd.Run(resolver: pair.resolver, domain: pair.domain, error: refusal))
                    continue
                }
                let resolver = target.endpoint
                logger.notice("e2e \(index + 1)/\(chosen.count): \(configuration.engine.rawValue) through \(target) for \(pair.domain)")
                do {
                    let result = try await configuration.run(resolver: resolver, domain: pair.domain, index: index, target: target)
                    if result.verdict == .incomplete { break }
                    runs.append(ScanEndToEnd.Run(resolver: pair.resolver, domain: pair.domain, result: result))
                } catch {
                    runs.append(ScanEndToEnd.Run(resolver: pair.resolver, domain: pair.domain, error: (error as? VerifyError)?.message ?? "\(error)"))
                }
            }
            return runs
        }
        let trap = SignalTrap { _ in task.cancel() }
        let runs = await task.value
        trap.release()
        var note: String?
        if chosen.isEmpty { note = "no usable pair to run end to end" }
        if runs.count < chosen.count { note = "interrupted: \(runs.count) of \(chosen.count) pairs run end to end" }
        return ScanEndToEnd(engine: configuration.engine.rawValue, requested: count, selection: Self.selection,
                            firstDataURL: configuration.whoami.description, bulkURL: configuration.bulk?.url.description,
                            bulkBytes: configuration.bulk?.bytes, deadlineMs: configuration.deadline.milliseconds, runs: runs, note: note,
                            engineDomain: configuration.engineDomain)
    }
}

private extension Duration {
    var milliseconds: Int { Int(components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000) }
}

/// `--e2e-domain`: the domain the engine runs on, each pair's probe domain or the profile's own.
enum EndToEndDomain: String, CaseIterable, ExpressibleByArgument {
    case pair, profile
}
