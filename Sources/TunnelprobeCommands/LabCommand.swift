import ArgumentParser
import Foundation
import Impairment
import Lab
import Logging
import OSLayer
import TunnelVerify

/// `tunnelprobe lab`: parses arguments and calls the Lab module.
struct LabCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lab",
        abstract: "A namespace testbed: a client, a real unbound resolver and the probe responder.",
        discussion: """
            Three network namespaces (client, resolver, server) joined by veth pairs on \
            198.18.0.0/15. unbound in the resolver namespace answers the client on 198.18.0.1 \
            and on every address of 198.18.4.0/22, and delegates the lab domain to \
            `tunnelprobe serve` in the server namespace. Needs root, iproute2 and unbound.

            Example:
              tunnelprobe lab up --resolver-udp-limit 1232
              tunnelprobe lab exec -- tunnelprobe scan --resolver 198.18.0.1 \\
                --domain vpn.lab.test --key-file /run/tunnelprobe/labs/default/key.hex
              tunnelprobe lab down
            """,
        subcommands: [Up.self, Down.self, Status.self, Exec.self, Demo.self, Internet.self]
    )
}

/// The options every lab subcommand shares.
struct LabSelection: ParsableArguments {
    @Option(help: "The lab's name: 1 to 8 characters from a-z and 0-9.")
    var name = "default"

    @Option(help: "Directory that holds each lab's state directory.")
    var stateRoot = LabConfig.defaultStateRoot

    @Flag(name: .shortAndLong, help: "Log each step and command to stderr.")
    var verbose = false

    func validate() throws {
        do {
            try LabConfig.validate(name: name)
        } catch {
            throw ValidationError(error.message)
        }
    }

    var logger: Logger {
        var logger = Logger(label: "tunnelprobe.lab", factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = verbose ? .debug : .warning
        return logger
    }
}

extension LabCommand {
    struct Up: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "up",
            abstract: "Build the lab (idempotent) and wait until unbound and the responder answer.",
            discussion: """
                A lab that is already up with the same settings is left as it is; one with other \
                settings, or a broken one, is rebuilt. On failure everything is removed again.

                With --impair, `tunnelprobe impair` runs in the client namespace on 198.18.0.53:53 \
                in front of unbound (198.18.0.1 stays direct) with the given flags; the lab sets \
                --listen, --upstream and --log (<state>/impair.jsonl, see `lab status --json`).

                Example:
                  tunnelprobe lab up --name demo --resolver-udp-limit 777 --json
                  tunnelprobe lab up --name lossy --impair "--seed 7 --up-loss 0.01 --down-ge p=0.02,r=0.3"
                """
        )

        @OptionGroup var lab: LabSelection

        @Option(help: "The domain the resolver delegates to the responder.")
        var domain = "vpn.lab.test"

        @Option(help: "The resolver: unbound or knot (Knot Resolver, kresd; Debian knot-resolver).")
        var resolverSoftware: LabConfig.ResolverSoftware = .unbound

        @Option(help: "Largest UDP response the resolver sends the client (unbound max-udp-size, knot net.bufsize); larger answers get TC.")
        var resolverUDPLimit: Int?

        @Option(help: "EDNS UDP size the resolver advertises upstream (unbound edns-buffer-size, default here 4096; knot default 1232).")
        var resolverUpstreamEdns: Int?

        @Option(help: "Queries each of unbound's 2 threads holds at once (num-queries-per-thread, default 4096): a small number makes a resolver that drops queries under load.")
        var resolverQueriesPerThread: Int?

        @Option(help: "Queries per second unbound accepts from one client address (ip-ratelimit, the excess dropped): a rate-limited resolver.")
        var resolverIpRatelimit: Int?

        @Flag(help: "unbound as shipped: one thread, the kernel's default socket buffers (the lab's own runs 2 threads with 4 MB buffers).")
        var resolverStock = false

        @Option(parsing: .unconditional, help: "Arguments for the lab's `serve`, in one string, e.g. \"--edns ignore\".")
        var serveArguments: String?

        @Flag(help: "Enable unbound use-caps-for-id (0x20 case randomisation of upstream queries).")
        var resolverCapsForID = false

        @Flag(inversion: .prefixedNo, help: "unbound qname-minimisation (RFC 9156).")
        var qnameMinimisation = true

        @Option(parsing: .unconditional, help: "Impair flags (see `tunnelprobe impair --help`) for a relay in front of the resolver, in one string.")
        var impair: String?

        @Option(help: "Also run the tunnel servers (iodined for this domain, OpenVPN, wireguard-go) and an internet namespace with nginx.")
        var tunnelDomain: String?

        @Flag(help: "unbound also serves DNS over TLS (port 853) and over HTTPS (port 443, /dns-query) with a CA made for this lab (<state>/lab-ca.pem; the certificate names resolver.lab.test, 198.18.0.1 and 2001:db8:18::53).")
        var resolverTls = false

        @Flag(help: "The resolver also has the IPv6 address 2001:db8:18::53 toward the client (2001:db8:18::2), on every port it serves.")
        var resolverIpv6 = false

        @Flag(help: "Run the tunnel servers for --domain itself, iodined on 198.18.1.2:5300 behind the responder, which the lab starts with `serve --forward` (one delegation, as a user has). Not with --tunnel-domain.")
        var tunnelBehindResponder = false

        @Option(help: "With --tunnel-domain: dnstt-server's program, run for d.<tunnel domain> on 198.18.1.4 in front of microsocks (default: dnstt-server on PATH, else no dnstt).")
        var dnsttServer: String?

        @Flag(help: "Print the lab status as JSON.")
        var json = false

        func validate() throws {
            if dnsttServer != nil, tunnelDomain == nil {
                throw ValidationError("--dnstt-server runs with the tunnel servers: give --tunnel-domain")
            }
            if tunnelBehindResponder, tunnelDomain != nil {
                throw ValidationError("--tunnel-behind-responder serves --domain; drop --tunnel-domain")
            }
            if let size = resolverUpstreamEdns, !LabConfig.upstreamEDNSRange.contains(size) {
                throw ValidationError("--resolver-upstream-edns must be within \(LabConfig.upstreamEDNSRange.lowerBound)...\(LabConfig.upstreamEDNSRange.upperBound)")
            }
            if let n = resolverQueriesPerThread, !LabConfig.queriesPerThreadRange.contains(n) {
                throw ValidationError("--resolver-queries-per-thread must be within \(LabConfig.queriesPerThreadRange.lowerBound)...\(LabConfig.queriesPerThreadRange.upperBound)")
            }
            if let limit = resolverUDPLimit, !LabConfig.udpLimitRange.contains(limit) {
                throw ValidationError(
                    "--resolver-udp-limit must be within \(LabConfig.udpLimitRange.lowerBound)...\(LabConfig.udpLimitRange.upperBound)"
                )
            }
        }

        func run() async throws {
            var impairCommand: [String]?
            if let impair {
                let flags = impair.split(whereSeparator: \.isWhitespace).map(String.init)
                for flag in flags where ["--listen", "--upstream", "--log"].contains(flag.split(separator: "=").first.map(String.init) ?? "") {
                    throw fail("--impair: \(flag) is set by the lab", Exit.badInput)
                }
                let options: ImpairOptions
                do {
                    options = try ImpairOptions.parse(flags)
                } catch {
                    throw fail("--impair: \(ImpairOptions.message(for: error))", .validationFailure)
                }
                do {
                    _ = try options.config(requireEndpoints: false).loadReplay()
                } catch {
                    throw fail("--impair: \(ImpairOptions.message(error))", Exit.badInput)
                }
                // A relative --replay path must still resolve once the relay runs as a daemon.
                impairCommand = [LabCLI.currentExecutable(), "impair"] + flags.enumerated().map { index, flag in
                    index > 0 && flags[index - 1] == "--replay" && !flag.hasPrefix("/")
                        ? FileManager.default.currentDirectoryPath + "/" + flag : flag
                }
            }
            let config = LabConfig(
                name: lab.name,
                domain: domain,
                resolverUDPLimit: resolverUDPLimit,
                resolverCapsForID: resolverCapsForID,
                qnameMinimisation: qnameMinimisation,
                // All probes reach the responder from the lab resolver alone: no per-source limit there.
                serverCommand: [LabCLI.currentExecutable(), "serve", "--rate-limit", "0"]
                    + (serveArguments?.split(whereSeparator: \.isWhitespace).map(String.init) ?? []),
                stateRoot: lab.stateRoot,
                impairCommand: impairCommand,
                tunnelDomain: tunnelDomain,
                resolverSoftware: resolverSoftware == .knot ? .knot : nil,
                resolverUpstreamEDNS: resolverUpstreamEdns,
                tunnelBehindResponder: tunnelBehindResponder,
                resolverQueriesPerThread: resolverQueriesPerThread,
                resolverIPRateLimit: resolverIpRatelimit,
                resolverTLS: resolverTls,
                resolverIPv6: resolverIpv6,
                resolverStock: resolverStock,
                // dnstt is in no package: the lab runs it only when its server is there.
                dnsttServer: tunnelDomain == nil ? nil
                    : dnsttServer.map { $0.hasPrefix("/") ? $0 : FileManager.default.currentDirectoryPath + "/" + $0 }
                        ?? Executables.locate("dnstt-server")
            )
            await LabCLI.reclaimOrphans(stateRoot: lab.stateRoot, logger: lab.logger)
            let status: LabStatus
            do {
                status = try await Lab.up(config, logger: lab.logger)
            } catch {
                throw LabCLI.fail(error)
            }
            if json {
                try LabCLI.printJSON(status)
            } else {
                printOut(LabCLI.describe(status), terminator: "")
                printOut("Run commands in the client namespace with: tunnelprobe lab exec --name \(status.name) -- COMMAND")
            }
        }
    }

    struct Down: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "down",
            abstract: "Stop the lab's daemons and remove its namespaces and state (idempotent).",
            discussion: """
                Works on whatever a killed `lab up` left behind: everything is found from the name.

                Example:
                  tunnelprobe lab down --name demo
                """
        )

        @OptionGroup var lab: LabSelection

        @Flag(help: "Print {\"name\": ..., \"down\": true} instead of the sentence.")
        var json = false

        func run() async throws {
            // Verify sandboxes killed inside the lab go first (their nft tables live in its client namespace).
            await LabCLI.reclaimOrphans(stateRoot: lab.stateRoot, logger: lab.logger)
            do {
                try await Lab.down(name: lab.name, stateRoot: lab.stateRoot, logger: lab.logger)
            } catch {
                throw LabCLI.fail(error)
            }
            printOut(json ? "{\"name\": \"\(lab.name)\", \"down\": true}" : "lab \(lab.name) is down")
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status",
            abstract: "Show the lab's addresses, daemons and health; exit 1 unless it is up and healthy.",
            discussion: """
                Example:
                  tunnelprobe lab status --name demo --json
                """
        )

        @OptionGroup var lab: LabSelection

        @Flag(help: "Print the status as JSON.")
        var json = false

        func run() async throws {
            guard let status = await Lab.status(name: lab.name, stateRoot: lab.stateRoot) else {
                LabCLI.printError("lab \(lab.name) is not up")
                throw ExitCode.failure
            }
            if json {
                try LabCLI.printJSON(status)
            } else {
                printOut(LabCLI.describe(status), terminator: "")
            }
            if !status.healthy { throw ExitCode.failure }
        }
    }

    struct Exec: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "exec",
            abstract: "Run a command in the lab's client namespace and exit with its status.",
            discussion: """
                Everything after `--` is the command; stdin, stdout and stderr are passed through.

                Example:
                  tunnelprobe lab exec --name demo -- ip -o addr
                """
        )

        @OptionGroup var lab: LabSelection

        @Argument(parsing: .postTerminator, help: "The command and its arguments, after `--`.")
        var command: [String] = []

        func validate() throws {
            if command.isEmpty { throw ValidationError("give the command after `--`, e.g. lab exec -- ip -o addr") }
        }

        func run() async throws {
            let status: Int32
            do {
                status = try await Lab.exec(name: lab.name, stateRoot: lab.stateRoot, command: command)
            } catch {
                throw LabCLI.fail(error)
            }
            if status != 0 { throw ExitCode(status) }
        }
    }
}

/// Output helpers of the lab subcommands.
enum LabCLI {
    /// Sandboxes of `verify`/`resilience` runs that were killed (owner provably dead); each one
    /// removed is logged. Lab builds killed half-way are reclaimed by `Lab.up`/`Lab.down` themselves.
    static func reclaimOrphans(stateRoot: String, logger: Logger) async {
        for line in await Sandbox.reclaimOrphans() { logger.notice("\(line)") }
    }

    /// The running binary, so that the responder is the same build as the CLI.
    static func currentExecutable() -> String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    static func printError(_ message: String) {
        printErr("tunnelprobe: error: \(message)")
    }

    /// Prints the error's one line and returns the exit code to throw.
    static func fail(_ error: LabError) -> ExitCode {
        printError(error.message)
        return ExitCode.failure
    }

    static func printJSON(_ status: LabStatus) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        printOut(String(decoding: try encoder.encode(status), as: UTF8.self))
    }

    static func describe(_ status: LabStatus) -> String {
        let limit = status.resolverUDPLimit.map { "\($0) bytes" } ?? "the resolver's default"
        var text = "lab \(status.name): \(status.healthy ? "healthy" : "NOT healthy")\n"
        text += "  namespaces  client \(status.namespaces.client), resolver \(status.namespaces.resolver), server \(status.namespaces.server)\n"
        text += "  client      \(status.clientAddress)\n"
        text += "  resolver    \(status.resolverAddress):\(status.resolverPort), aliases \(status.resolverAliases), UDP limit \(limit)\n"
        text += "  server      \(status.serverAddress):53, domain \(status.domain.isEmpty ? "(unknown)" : status.domain)\n"
        if let impaired = status.impairedResolverAddress {
            text += "  impaired    \(impaired):\(status.resolverPort) -> \(status.resolverAddress):\(status.resolverPort), log \(status.impairLog ?? "?")\n"
        }
        text += "  key         \(status.keyFile)\n"
        for process in status.processes {
            let role = process.role.padding(toLength: 11, withPad: " ", startingAt: 0)
            text += "  \(role) pid \(process.pid) \(process.running ? "running" : "NOT running"), log \(process.log)\n"
        }
        if let t = status.tunnel {
            text += "  tunnel      \(t.domain) via \(t.resolver), exit \(t.exitAddress), whoami \(t.whoamiURL)\(t.bulkURL.map { ", bulk \($0)" } ?? "")\n"
            for (engine, path) in (t.profiles ?? [:]).sorted(by: { $0.key < $1.key }) {
                text += "  profile     \(engine.padding(toLength: 10, withPad: " ", startingAt: 0)) \(path)\n"
            }
        }
        text += "  state       \(status.stateDirectory)\n"
        return text
    }
}
