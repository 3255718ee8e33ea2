import Base
import ArgumentParser
import Foundation
import Impairment
import OSLayer

/// `tunnelprobe impair`: reads its flags (`ImpairOptions`) and runs `ImpairRelay`.
struct ImpairCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "impair",
        abstract: "A user-space netem for UDP: a relay between clients and a resolver that loses, delays, reorders, duplicates, shapes and rewrites datagrams.",
        discussion: """
        Clients send to --listen; the relay forwards to --upstream from one socket per client and \
        impairs each direction on its own (--up-* for queries, --down-* for responses). Every random \
        choice comes from --seed; --log writes one JSON line per datagram and direction saying what \
        was done to it (docs/IMPAIR.md). SIGINT/SIGTERM stop it and print the counts.

        Examples:
          tunnelprobe impair --listen 127.0.0.1:5300 --upstream 127.0.0.1:53 \\
            --seed 7 --log impair.jsonl --up-loss 0.01 --down-ge p=0.02,r=0.3 \\
            --up-delay 20 --up-jitter 5 --down-reorder 0.01:3
          tunnelprobe impair --listen 127.0.0.1:5300 --upstream 127.0.0.1:53 \\
            --replay fates.json
        """
    )

    @OptionGroup var impairment: ImpairOptions

    @Flag(name: [.short, .long], help: "No summary on stderr.")
    var quiet = false

    @Flag(help: "At exit, print the summary as JSON to stdout (the log's last line has the same).")
    var json = false

    func validate() throws {
        do {
            _ = try impairment.config()
        } catch {
            throw ValidationError(ImpairOptions.message(error))
        }
    }

    func run() async throws {
        let config: ImpairmentConfig
        let replay: ReplayPlan?
        let log: ImpairmentLog?
        do {
            config = try impairment.config()
            replay = try config.loadReplay()
            log = try config.logPath.map { path throws(ImpairmentConfigError) in try ImpairmentLog(path: path) }
        } catch {
            throw fail(ImpairOptions.message(error), Exit.badInput)
        }
        let relay: ImpairRelay
        let shown: Endpoint
        do {
            relay = try ImpairRelay(config: config, replay: replay, log: log, arguments: Array(CommandContext.current.commandLine.dropFirst(2)))
            let bound = try await relay.start()
            shown = bound.ipAddress.flatMap { IPAddress($0) }.map { Endpoint(address: $0, port: UInt16(clamping: bound.port ?? 0)) } ?? config.listen
        } catch {
            throw fail("cannot listen on \(config.listen): \(error)", Exit.forSystemFailure(error))
        }
        let trap = SignalTrap { _ in Task { await relay.stop() } }
        defer { trap.release() }
        // Said once a signal stops the relay in order: whoever waits for this line may signal at once.
        if !quiet { printErr("impair: relaying \(shown) -> \(config.upstream), seed \(config.seed)") }
        await relay.wait()
        let summary = await relay.stop()
        if !quiet { printErr(summary.text) }
        if json { printOut("{\"summary\":\(summary.json)}") }
    }
}
