public import ArgumentParser
import DNSWire
import Foundation
import ProbeClient
import ProbeProtocol

struct LoadgenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "loadgen",
        abstract: "Closed-loop query load against a responder (the scan engine's rate, next to dnsperf's).",
        discussion: """
        Keeps --outstanding authenticated echo probes in flight for --duration seconds and prints the
        rate, in dnsperf's words. --write-queries writes the same kind of probes as a dnsperf data file.

        Example:
          tunnelprobe loadgen --server 127.0.0.1:5353 --domain vpn.lab.test --key-file probe.key --duration 10
        """
    )

    @Option(help: "Responder or resolver to load, ip:port.")
    var server: String

    @Option(help: "Zone served there.")
    var domain: String

    @Option(help: "Key file.")
    var keyFile: String

    @Option(help: "Queries kept in flight.")
    var outstanding: Int = 100

    @Option(help: "Seconds of load.")
    var duration: Double = 10

    @Option(help: "eventLoop: each answer sends the next probe from the event loop (as dnsperf does); tasks: one Swift task per outstanding probe, as the scan runs them; prebuilt: the query engine alone on probes built before the clock starts, as dnsperf reads its data file first.")
    var mode: LoadGenerator.Mode = .eventLoop

    @Option(help: "Write N probe names as a dnsperf data file to this path instead of sending.")
    var writeQueries: String?

    @Option(help: "How many names --write-queries writes.")
    var count: Int = 100_000

    @OptionGroup var common: CommonOptions

    func validate() throws {
        guard (1...100_000).contains(outstanding) else { throw ValidationError("--outstanding must be 1...100000") }
        guard duration > 0, duration <= 600 else { throw ValidationError("--duration must be in (0, 600]") }
    }

    func run() async throws {
        let key = try loadProbeKey(keyFile)
        guard let zone = try? DNSName(domain) else { throw fail("--domain \(domain) is not a domain name", .validationFailure) }
        guard let target = try? ResolverList.parse(entry: server).0.first else {
            throw fail("--server \(server) is not ip:port", .validationFailure)
        }
        let engine = QueryEngine(seed: UInt64.random(in: 0...UInt64.max))
        let generator = LoadGenerator(prober: Prober(engine: engine, key: key, timeout: .seconds(2)), zone: zone)
        if let path = writeQueries {
            do { try generator.dnsperfLines(count: count).write(toFile: path, atomically: true, encoding: .utf8) } catch {
                throw fail("\(path): \(error)", Exit.environment)
            }
            await engine.shutdown()
            return
        }
        let r = await generator.run(target: target, outstanding: outstanding, duration: .milliseconds(Int(duration * 1000)), mode: mode)
        await engine.shutdown()
        if common.json {
            printOut("{\"sent\": \(r.sent), \"answered\": \(r.answered), \"timedOut\": \(r.timedOut), \"seconds\": \(r.seconds), \"queriesPerSecond\": \(r.queriesPerSecond)}")
        } else {
            printOut("Queries sent: \(r.sent)\nQueries completed: \(r.answered)\nQueries lost: \(r.timedOut)\nQueries per second: \(String(format: "%.1f", r.queriesPerSecond))")
        }
    }
}

extension LoadGenerator.Mode: ExpressibleByArgument {}
