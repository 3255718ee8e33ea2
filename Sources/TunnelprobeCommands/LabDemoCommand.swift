import ArgumentParser
import Foundation
import Lab
import OSLayer
import Reports
import Results

extension LabCommand {
    /// `make demo`: one lab, every stage, one report directory with an index page.
    struct Demo: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "demo",
            abstract: "Bring the lab up, run scan -> path with capture -> trace -> simulate -> verify, write one report, take the lab down.",
            discussion: """
                The lab gets an impairment relay in front of its resolver (seeded, --impair) so that the
                path stage has something to measure, and the tunnel servers so that verify can run iodine
                through the real resolver. Every stage runs in the lab's client namespace as a user would
                run it; its exit status, time and last words go into manifest.json, and the index page
                shows every stage, including the ones that failed. The lab is taken down at the end, on
                failure and on Ctrl-C. Needs root.

                Example:
                  tunnelprobe lab demo --seed 7
                """
        )

        @Option(help: "Seed for every random choice of every stage (random when absent, always reported).")
        var seed: UInt64?

        @Option(help: "Impair flags for the relay in front of the resolver (see `tunnelprobe impair --help`).")
        var impair = "--up-loss 0.02 --down-ge p=0.01,r=0.3 --down-reorder 0.005:2"

        @Option(help: "Path probes per second and how many.")
        var pathRate: Double = 400

        @Option(help: "Path probes in all.")
        var pathCount: Int = 4000

        @Option(help: "Report directory (default reports/<run-id>).")
        var out: String?

        @Flag(help: "Leave the lab up afterwards (take it down with `tunnelprobe lab down --name NAME`).")
        var keep = false

        @OptionGroup var common: CommonOptions

        func run() async throws {
            guard geteuid() == 0 else { throw fail("lab demo creates network namespaces: run it as root", Exit.noPermission) }
            let seed = self.seed ?? UInt64.random(in: 0...UInt64.max)
            let runID = ReportWriter.runID(kind: "demo")
            let directory = URL(fileURLWithPath: out ?? "reports/\(runID)").standardizedFileURL.path
            let name = "d" + String(UInt32.random(in: 0...UInt32.max), radix: 36).prefix(7)
            let binary = LabCLI.currentExecutable()
            var logger = common.logger("lab-demo")
            if !common.verbose { logger.logLevel = .warning }
            let started = Date()
            do { try FileManager.default.createDirectory(atPath: directory + "/logs", withIntermediateDirectories: true) } catch {
                throw fail("\(directory): \(error.localizedDescription)", Exit.environment)
            }

            let config = LabConfig(
                name: name, resolverUDPLimit: 1232, resolverCapsForID: false,
                // iodine's query-type detection stalls behind QNAME minimisation (docs/VERIFY.md).
                qnameMinimisation: false,
                serverCommand: [binary, "serve", "--rate-limit", "0"],
                impairCommand: [binary, "impair", "--seed", "\(seed)"] + impair.split(whereSeparator: \.isWhitespace).map(String.init),
                tunnelDomain: "t.lab.test"
            )
            let trap = SignalTrap { _ in
                // Ctrl-C: the running stage gets the signal too (same process group) and writes its partial
                // report; the lab still comes down below once it returns.
            }
            defer { trap.release() }
            say("lab \(name): up (resolver behind an impairment relay, tunnel servers) ...")
            let lab: LabStatus
            do {
                lab = try await Lab.up(config, logger: logger)
            } catch {
                try? await Lab.down(name: name, stateRoot: config.stateRoot, logger: logger)
                throw LabCLI.fail(error)
            }
            var stages: [RunManifest.Stage] = []
            let plan = DemoPlan(lab: lab, binary: binary, directory: directory, seed: seed, pathRate: pathRate, pathCount: pathCount)
            do { try plan.writeProfile() } catch { printErr("tunnelprobe: warning: cannot write the verify profile: \(error)") }
            for stage in plan.stages {
                say("\(stage.kind.rawValue): \(stage.summary) ...")
                let result = await run(stage, in: lab)
                stages.append(result)
                say("\(stage.kind.rawValue): \(result.status)\(result.note.map { " (\($0))" } ?? "") in \(HTML.number(result.seconds, decimals: 1)) s")
            }
            if keep {
                say("lab \(name) left up")
            } else {
                do { try await Lab.down(name: name, stateRoot: config.stateRoot, logger: logger) } catch {
                    printErr("tunnelprobe: warning: lab down: \(error)")
                }
            }

            let run = RunInfo(id: runID, version: toolVersion, commandLine: CommandContext.current.commandLine, vantage: "lab \(name)",
                              seed: seed, startedAt: ReportWriter.timestamp(started), finishedAt: ReportWriter.timestamp())
            do {
                try ReportWriter.write([("manifest.json", try ReportWriter.json(RunManifest(run: run, stages: stages)))], to: directory)
            } catch {
                throw fail("\(error)", Exit.environment)
            }
            let problems = ReportWriter.renderRun(directory: directory, indexRoot: out == nil ? "reports" : nil)
            for p in problems { printErr("tunnelprobe: \(p)") }
            printOut("report: \(directory)/index.html")
            if stages.contains(where: { $0.status != "ok" }) || !problems.isEmpty { throw Exit.checksFailed }
        }

        private func say(_ line: String) {
            if !common.quiet { printErr(line) }
        }

        /// Runs one stage in the client namespace; its output goes to logs/<stage>.log.
        private func run(_ stage: DemoPlan.Stage, in lab: LabStatus) async -> RunManifest.Stage {
            let log = "\(stage.directory)/logs/\(stage.kind.rawValue).log"
            let start = Date()
            let code: Int32
            do {
                code = try await Lab.exec(name: lab.name, command: stage.arguments, log: log)
            } catch {
                return .init(kind: stage.kind, file: stage.kind.fileName, status: "error", note: "cannot start: \(error)", seconds: 0)
            }
            let seconds = Date().timeIntervalSince(start)
            // The stage's own error line when it wrote one, else its last line: a failed stage is
            // never reported with an exit status alone when its log says more.
            let lines = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")
                .split(separator: "\n").filter { !$0.allSatisfy(\.isWhitespace) }
            let lastLine = (lines.last { $0.contains("error") || $0.contains("warning") } ?? lines.last).map(String.init)
            let status = code == 0 ? "ok" : (code == 1 ? "failed" : (code == 130 ? "interrupted" : "error"))
            return .init(kind: stage.kind, file: stage.kind.fileName, status: status,
                         note: code == 0 ? nil : "exit \(code)\(lastLine.map { ": \($0)" } ?? "")", seconds: seconds)
        }
    }
}

/// The demo's stages and their command lines: what a user would type in the lab's client namespace.
struct DemoPlan {
    struct Stage {
        var kind: ReportKind
        var summary: String
        var arguments: [String]
        var directory: String
    }

    let lab: LabStatus
    let binary: String
    let directory: String
    let seed: UInt64
    let pathRate: Double
    let pathCount: Int

    var profilePath: String { directory + "/inputs/profile.json" }

    /// The iOS client's profile for the lab's iodine server.
    func writeProfile() throws {
        guard let t = lab.tunnel else { return }
        try FileManager.default.createDirectory(atPath: directory + "/inputs", withIntermediateDirectories: true)
        let profile = """
            {"version":1,"name":"lab iodine","protocol":"iodine","domain":"\(t.domain)",
             "resolvers":[{"type":"udp","address":"\(t.resolver):53"}],"expectedExitIP":"\(t.exitAddress)",
             "dns":["\(t.tunnelDNS)"],"iodine":{"passwordFile":"\(t.iodinePasswordFile)"}}
            """
        try profile.write(toFile: profilePath, atomically: true, encoding: .utf8)
    }

    var stages: [Stage] {
        let impaired = lab.impairedResolverAddress ?? lab.resolverAddress
        let vantage = ["--vantage", "lab \(lab.name)"]
        let common = ["--domain", lab.domain, "--key-file", lab.keyFile, "--seed", "\(seed)", "--out", directory, "--quiet"] + vantage
        var list: [Stage] = [
            Stage(kind: .scan, summary: "MTU of the direct resolver, two aliases, the impaired path and a silent address",
                  arguments: [binary, "scan", "--resolver", lab.resolverAddress, "--resolver", "198.18.4.10", "--resolver", "198.18.4.11",
                              "--resolver", impaired, "--resolver", "198.18.0.99", "--timeout", "1"] + common,
                  directory: directory),
            Stage(kind: .path, summary: "\(pathCount) probes at \(Int(pathRate))/s through the impaired resolver, captured",
                  arguments: [binary, "path", "--resolver", impaired, "--rate", "\(pathRate)", "--count", "\(pathCount)",
                              "--size", "100:300", "--tmax", "2", "--shared-clock", "--capture", directory + "/path.pcap",
                              "--export-fates", directory + "/path-fates.json"] + common,
                  directory: directory),
            Stage(kind: .trace, summary: "the path capture, query by query",
                  arguments: [binary, "trace", directory + "/path.pcap", "--tmax", "2", "--export-fates", directory + "/trace-fates.json",
                              "--out", directory, "--quiet"] + vantage,
                  directory: directory),
            Stage(kind: .simulate, summary: "FEC levels and ARQ against the captured fates",
                  arguments: [binary, "simulate", "--fates", directory + "/trace-fates.json", "--runs", "3", "--seed", "\(seed)",
                              "--out", directory, "--quiet"],
                  directory: directory),
        ]
        if let t = lab.tunnel {
            list.append(Stage(kind: .verify, summary: "iodine through the lab's resolver: handshake, exit IP, leaks",
                              arguments: [binary, "verify", "--profile", profilePath, "--whoami-url", t.whoamiURL,
                                          "--leak-zone", lab.domain, "--leak-key-file", lab.keyFile, "--expected-resolver", t.tunnelDNS,
                                          "--seed", "\(seed)", "--out", directory, "--quiet"],
                              directory: directory))
        }
        return list
    }
}
