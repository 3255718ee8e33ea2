import Foundation
@testable import Lab
import Testing
import TestSupport

/// The lab's life: up, status, queries through the real unbound from the client namespace,
/// idempotent up, rebuild, exec, down, and failures that must leave nothing behind.
@Suite(.serialized, .enabled(if: LabGate.lab.runs, "\(LabGate.lab.missing ?? "lab tests can run")"))
struct LabLifecycleTests {
    @Test(.timeLimit(.minutes(2)))
    func upAnswersOnEveryAddressIsIdempotentAndDownLeavesNothing() async throws {
        try LabGate.lab.check()
        let config = LabFixture.config()
        let name = config.name
        var firstPIDs: [Int32] = []
        try await LabFixture.withLab(config) { status in
            #expect(status.healthy)
            #expect(status.name == name)
            #expect(status.namespaces == .init(client: "tp-\(name)-cli", resolver: "tp-\(name)-res", server: "tp-\(name)-srv"))
            #expect(status.clientAddress == "198.18.0.2")
            #expect(status.resolverAddress == "198.18.0.1" && status.resolverPort == 53)
            #expect(status.resolverAliases == "198.18.4.0/22")
            #expect(status.serverAddress == "198.18.1.2")
            #expect(status.domain == "vpn.lab.test")
            #expect(status.processes.map(\.role) == ["unbound", "responder"])
            #expect(status.processes.allSatisfy { $0.running })
            firstPIDs = status.processes.map(\.pid)

            // The key: 64 lowercase hex digits and a newline, readable by root only.
            let key = try String(contentsOfFile: status.keyFile, encoding: .utf8)
            #expect(key.count == 65 && key.hasSuffix("\n"))
            #expect(key.dropLast().allSatisfy { "0123456789abcdef".contains($0) })
            let mode = try FileManager.default.attributesOfItem(atPath: status.keyFile)[.posixPermissions] as? Int
            #expect(mode == 0o600)

            // The responder got the flags the lab appends.
            let responderLog = try String(contentsOfFile: status.processes[1].log, encoding: .utf8)
            #expect(responderLog.contains("args: --domain vpn.lab.test --key-file \(status.keyFile) --listen 198.18.1.2:53"))

            // unbound answers from the client namespace on its address and on aliases, and each
            // reply comes from the address the query was sent to.
            for address in ["198.18.0.1", "198.18.4.200", "198.18.4.0", "198.18.7.255"] {
                let reply = try await Lab.query(name: name, server: address, qname: "localhost.")
                #expect(reply.source == address && reply.sourcePort == 53)
                #expect(reply.responseCode == 0 && reply.answerCount == 1)
            }

            // up again with the same configuration: the same daemons.
            let again = try await Lab.up(config, logger: LabFixture.logger)
            #expect(again.healthy)
            #expect(again.processes.map(\.pid) == firstPIDs)
            #expect(await Lab.status(name: name) == again)
        }
        #expect(try LabFixture.leftovers(name: name) == [])
        for pid in firstPIDs { #expect(SystemCalls.process(pid)?.isAlive != true, "pid \(pid) survived down") }
        #expect(await Lab.status(name: name) == nil)
        // down again: nothing to do, no error.
        try await Lab.down(name: name, logger: LabFixture.logger)
    }

    @Test(.timeLimit(.minutes(1)))
    func aResponderThatExitsFailsUpAndLeavesNothing() async throws {
        try LabGate.lab.check()
        let config = LabFixture.config(serverCommand: ["/bin/false"], readiness: .udpListening)
        await #expect {
            try await Lab.up(config, logger: LabFixture.logger)
        } throws: { error in
            guard let error = error as? LabError else { return false }
            return error.code == .startFailed && error.message.hasPrefix("responder exited during start")
        }
        #expect(try LabFixture.leftovers(name: config.name) == [])
        #expect(await Lab.status(name: config.name) == nil)
    }

    @Test(.timeLimit(.minutes(1)))
    func aResponderThatNeverListensFailsUpWithItsLastLogLine() async throws {
        try LabGate.lab.check()
        let config = LabFixture.config(
            serverCommand: ["/bin/sh", "-c", "echo 'stand-in: not listening'; exec sleep 600", "stand-in"],
            readiness: .udpListening
        )
        do {
            _ = try await Lab.up(config, logger: LabFixture.logger)
            Issue.record("up succeeded although nothing listens on 198.18.1.2:53")
            try await Lab.down(name: config.name, logger: LabFixture.logger)
        } catch {
            #expect(error.code == .startFailed)
            #expect(error.message.contains("did not listen on UDP 198.18.1.2:53"))
            #expect(error.message.contains("stand-in: not listening"))
        }
        #expect(try LabFixture.leftovers(name: config.name) == [])
    }

    /// A responder that does listen (unbound serving a local zone on 198.18.1.2) passes the
    /// default readiness check.
    @Test(.timeLimit(.minutes(1)))
    func aListeningResponderPassesTheUDPCheck() async throws {
        try LabGate.lab.check()
        let configFile = FileManager.default.temporaryDirectory.appendingPathComponent("tp-lab-responder-\(UUID().uuidString).conf").path
        try """
            server:
                do-daemonize: no
                username: ""
                chroot: ""
                pidfile: ""
                use-syslog: no
                logfile: ""
                interface: 198.18.1.2
                do-ip6: no
                access-control: 198.18.0.0/15 allow
            """.write(toFile: configFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: configFile) }
        let unbound = try #require(Toolbox.locate("unbound"))
        let config = LabFixture.config(
            serverCommand: ["/bin/sh", "-c", "exec \(unbound) -d -c \(configFile)", "stand-in"],
            readiness: .udpListening
        )
        try await LabFixture.withLab(config) { status in
            #expect(status.healthy)
            let reply = try await Lab.query(name: config.name, from: .resolver, server: "198.18.1.2", qname: "localhost.")
            #expect(reply.source == "198.18.1.2" && reply.responseCode == 0)
        }
        #expect(try LabFixture.leftovers(name: config.name) == [])
    }

    @Test(.timeLimit(.minutes(1)))
    func execRunsInTheClientNamespaceAndReturnsTheStatus() async throws {
        try LabGate.lab.check()
        let config = LabFixture.config()
        try await LabFixture.withLab(config) { _ in
            let inClient = try await Lab.exec(
                name: config.name,
                command: ["/bin/sh", "-c", "ip -o addr show | grep -q ' 198.18.0.2/24 ' && ! ip -o addr show | grep -q 198.18.1.2"]
            )
            #expect(inClient == 0)
            #expect(try await Lab.exec(name: config.name, command: ["/bin/sh", "-c", "exit 7"]) == 7)
            #expect(try await Lab.exec(name: config.name, command: ["/bin/sh", "-c", "kill -TERM $$"]) == 128 + 15)
            #expect(
                Lab.namespaceCommand(name: config.name, role: .client, command: ["true"])
                    == ["ip", "netns", "exec", "tp-\(config.name)-cli", "true"]
            )
            let viaArgv = try LabFixture.shell(Lab.namespaceCommand(name: config.name, role: .server, command: ["ip", "-o", "addr", "show"]))
            #expect(viaArgv.status == 0 && viaArgv.output.contains("198.18.1.2/24"))
        }
        await #expect(throws: LabError.self) {
            try await Lab.exec(name: config.name, command: ["true"])
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func upRebuildsALabWhoseDaemonDied() async throws {
        try LabGate.lab.check()
        let config = LabFixture.config()
        try await LabFixture.withLab(config) { status in
            let responder = try #require(status.processes.last)
            kill(responder.pid, SIGKILL)
            try await Task.sleep(for: .milliseconds(200))
            let broken = try #require(await Lab.status(name: config.name))
            #expect(!broken.healthy)
            #expect(broken.processes.last?.running == false)

            let rebuilt = try await Lab.up(config, logger: LabFixture.logger)
            #expect(rebuilt.healthy)
            #expect(rebuilt.processes.last?.pid != responder.pid)
            #expect(SystemCalls.process(status.processes[0].pid)?.isAlive != true, "the old unbound survived the rebuild")

            // Another configuration of the same name replaces the lab as well.
            var changed = config
            changed.resolverUDPLimit = 777
            let replaced = try await Lab.up(changed, logger: LabFixture.logger)
            #expect(replaced.healthy && replaced.resolverUDPLimit == 777)
            #expect(replaced.processes.map(\.pid) != rebuilt.processes.map(\.pid))
        }
        #expect(try LabFixture.leftovers(name: config.name) == [])
    }

    /// What a `kill -9` of `lab up` half-way leaves (a namespace, a veth, a process inside, a
    /// state directory without a state file) is found and removed by `down` from the name alone.
    @Test(.timeLimit(.minutes(1)))
    func downRemovesPartialStateFromTheNameAlone() async throws {
        try LabGate.lab.check()
        let name = LabFixture.uniqueName()
        let topology = LabTopology(name: name)
        let directory = LabState.directory(name: name, stateRoot: LabConfig.defaultStateRoot)
        let client = topology.namespace(.client)
        let resolver = topology.namespace(.resolver)
        #expect(try LabFixture.shell(["ip", "netns", "add", client]).status == 0)
        #expect(try LabFixture.shell(["ip", "netns", "add", resolver]).status == 0)
        #expect(try LabFixture.shell([
            "ip", "link", "add", "name", topology.clientLink, "netns", client,
            "type", "veth", "peer", "name", topology.resolverClientLink, "netns", resolver,
        ]).status == 0)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // A process in the namespace that ignores SIGTERM: down must SIGKILL it.
        let marker = directory + "/marker"
        try "".write(toFile: marker, atomically: true, encoding: .utf8)
        let stubborn = Process()
        stubborn.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        stubborn.arguments = ["ip", "netns", "exec", client, "/bin/sh", "-c", "trap '' TERM; while :; do sleep 0.1; done", marker]
        try stubborn.run()
        try await Task.sleep(for: .milliseconds(300))

        let partial = try #require(await Lab.status(name: name))
        #expect(!partial.healthy && partial.processes.isEmpty)

        try await Lab.down(name: name, logger: LabFixture.logger)
        stubborn.waitUntilExit()
        #expect(stubborn.terminationReason == .uncaughtSignal && stubborn.terminationStatus == SIGKILL)
        #expect(try LabFixture.leftovers(name: name) == [])
        #expect(await Lab.status(name: name) == nil)
    }

    @Test func theGateIsHonest() throws {
        // In CI this fails loudly, with the reason, when lab tests cannot run.
        if TestEnvironment.labRequired { try LabGate.lab.check() }
    }
}
