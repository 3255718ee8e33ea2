import ArgumentParser
import DNSWire
import Foundation
import Lab
import Logging
import ProbeProtocol
import Reports

extension LabCommand {
    /// `tunnelprobe lab internet`: the simulated /16 that `sweep` tests and benchmarks scan.
    struct Internet: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "internet",
            abstract: "A simulated internet: one namespace where every address of 198.19.0.0/16 answers as a seeded mix says.",
            discussion: """
                Creates the namespace tpsim-<hex> with 198.19.0.0/16 routed to its loopback and one \
                responder that answers for every address (IP_PKTINFO): most addresses are silent; \
                the rest are honest resolvers with a UDP limit, hijackers, lossy, rate-limited or slow \
                resolvers, each decided by the seed. The IPv6 hosts of 2001:db8:19::/112 answer the \
                same way (IPV6_PKTINFO), for explicit IPv6 lists (truth.json hosts6). Writes into --dir: key.hex (the probe key), \
                truth.json (every address that is not silent and its behaviour), ranges.txt and netns \
                (the namespace's name); at the end probes.json (the sweep probes each address received).
                With a command after `--`, runs it in the namespace and removes everything when it \
                ends; without one, writes --dir/ready and runs until SIGINT or SIGTERM. Needs root.

                Example:
                  tunnelprobe lab internet --dir /tmp/sim --seed 7 -- \\
                    tunnelprobe sweep --ranges /tmp/sim/ranges.txt --domain vpn.sim.test \\
                    --key-file /tmp/sim/key.hex --rate 5000
                """
        )

        @Option(help: "Directory for key.hex, truth.json, ranges.txt, netns, ready and probes.json.")
        var dir: String

        @Option(help: "Seed of the mix (which address does what); random when absent, written in truth.json.")
        var seed: UInt64?

        @Option(help: "The tunnel domain the simulated resolvers answer for.")
        var domain = "vpn.sim.test"

        @Option(help: "Fraction of the addresses that answer (0-0.5); the behaviours keep their shares of it (60 % honest, 10 % each hijacker, lossy, rate-limited, slow).")
        var answering = 0.02

        @Option(help: "Probability (0-1) that a lossy host drops a query (default 0.3; 0 makes the lossy hosts reliable, for tests that compare two sweeps address by address).")
        var lossRate = 0.3

        @Flag(name: .shortAndLong, help: "Log each step and command to stderr.")
        var verbose = false

        @Argument(parsing: .postTerminator, help: "A command to run in the namespace, after `--`.")
        var command: [String] = []

        func validate() throws {
            guard (0...0.5).contains(answering) else { throw ValidationError("--answering must be in 0...0.5") }
            guard (0...1).contains(lossRate) else { throw ValidationError("--loss-rate must be in 0...1") }
            do { _ = try DNSName(domain) } catch { throw ValidationError("--domain \(domain): \(error)") }
        }

        func run() async throws {
            var logger = Logger(label: "tunnelprobe.lab.internet", factory: { StreamLogHandler.standardError(label: $0) })
            logger.logLevel = verbose ? .debug : .warning
            let seed = seed ?? UInt64.random(in: 0...UInt64.max)
            var mix = SimulatedInternet.Mix()
            let scale = answering / mix.answering
            mix.honest *= scale
            mix.hijacker *= scale
            mix.lossy *= scale
            mix.rateLimited *= scale
            mix.slow *= scale
            mix.lossRate = lossRate
            let zone = try DNSName(domain)
            let keyText = ProbeKey.generateHexText()
            let key: ProbeKey
            do { key = try ProbeKey(hexText: keyText) } catch { throw fail("\(error)", Exit.environment) }
            let truth = SimulatedInternet.truth(seed: seed, mix: mix, domain: domain)
            do {
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
                try? FileManager.default.removeItem(atPath: dir + "/ready")
                try? FileManager.default.removeItem(atPath: dir + "/probes.json")
                try (keyText + "\n").write(toFile: dir + "/key.hex", atomically: true, encoding: .utf8)
                try ReportWriter.json(truth).write(toFile: dir + "/truth.json", atomically: true, encoding: .utf8)
                try "# the simulated internet (tunnelprobe lab internet)\n\(SimulatedInternet.prefix)\n"
                    .write(toFile: dir + "/ranges.txt", atomically: true, encoding: .utf8)
            } catch {
                throw fail("--dir \(dir): \(error)", Exit.environment)
            }

            let lab: SimulatedInternetLab
            do {
                lab = try await SimulatedInternetLab.up(seed: seed, mix: mix, zone: zone, key: key, logger: logger)
            } catch {
                throw LabCLI.fail(error)
            }
            let interruption = Interruption()
            var status: Int32 = 0
            do {
                try (lab.namespace + "\n").write(toFile: dir + "/netns", atomically: true, encoding: .utf8)
                if command.isEmpty {
                    try "ready\n".write(toFile: dir + "/ready", atomically: true, encoding: .utf8)
                    let stream = AsyncStream<Void> { continuation in
                        let trap = interruption.trap(then: { continuation.finish() })
                        continuation.onTermination = { _ in trap.release() }
                    }
                    for await _ in stream {}
                } else {
                    let trap = interruption.trap()
                    defer { trap.release() }
                    status = try await lab.run(command)
                }
            } catch {
                await finish(lab)
                throw fail("\(error)", Exit.environment)
            }
            await finish(lab)
            if status != 0 { throw ExitCode(status) }
            if interruption.happened, !command.isEmpty { throw Exit.interrupted }
        }

        private func finish(_ lab: SimulatedInternetLab) async {
            await lab.down()
            if let json = try? ReportWriter.json(lab.responder.probeCounts) {
                try? json.write(toFile: dir + "/probes.json", atomically: true, encoding: .utf8)
            }
            try? FileManager.default.removeItem(atPath: dir + "/ready")
        }
    }
}
