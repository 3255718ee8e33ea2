import Foundation
@testable import Lab
import Testing
import TestSupport

/// `lab up --impair`: the relay in front of unbound, its log against what the client received.
@Suite(.serialized, .enabled(if: LabGate.labWithBinary.runs, "\(LabGate.labWithBinary.missing ?? "lab tests can run")"))
struct LabImpairmentTests {
    private func config(_ flags: [String]) -> LabConfig {
        var config = LabFixture.config()
        config.impairCommand = [TestEnvironment.binary, "impair"] + flags
        return config
    }

    @Test(.timeLimit(.minutes(2)))
    func queriesThroughTheRelayMatchItsLog() async throws {
        try LabGate.labWithBinary.check()
        let flags = ["--seed", "11", "--up-loss", "0.2", "--up-duplicate", "0.2",
                     "--down-loss", "0.1", "--down-duplicate", "0.3", "--down-reorder", "0.1"]
        try await LabFixture.withLab(config(flags)) { status in
            #expect(status.healthy && status.processes.map(\.role) == ["unbound", "responder", "impair"])
            #expect(status.impairedResolverAddress == "198.18.0.53")
            let logPath = try #require(status.impairLog)
            #expect(logPath == status.stateDirectory + "/impair.jsonl")

            // 300 queries with distinct ids from the client namespace; unbound answers
            // "localhost." itself.
            let fd = try NamespaceSocket.udp(namespacePath: LabTopology(name: status.name).namespacePath(.client))
            defer { NamespaceSocket.close(fd) }
            let count = 300
            var arrivals: [Int: Int] = [:]
            for id in 0..<count {
                let query = try DNSProbeMessage.query(id: UInt16(id), name: "localhost.", type: 1, ednsPayloadSize: nil)
                try NamespaceSocket.send(fd, query, to: "198.18.0.53", port: 53)
                try await Task.sleep(for: .milliseconds(1))
                while let datagram = NamespaceSocket.receive(fd) { arrivals[Int(datagram.bytes[0]) << 8 | Int(datagram.bytes[1]), default: 0] += 1 }
            }
            let clock = ContinuousClock()
            let end = clock.now + .milliseconds(1500)  // past the 1 s reordering hold and the log's 1 s flush
            while clock.now < end {
                while let datagram = NamespaceSocket.receive(fd) { arrivals[Int(datagram.bytes[0]) << 8 | Int(datagram.bytes[1]), default: 0] += 1 }
                try await Task.sleep(for: .milliseconds(5))
            }
            try await Task.sleep(for: .milliseconds(600))

            let lines = try String(contentsOfFile: logPath, encoding: .utf8).split(separator: "\n").compactMap {
                try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }.filter { $0["dir"] != nil }
            let up = lines.filter { $0["dir"] as? String == "up" }
            let down = lines.filter { $0["dir"] as? String == "down" }
            #expect(up.compactMap { $0["id"] as? Int } == Array(0..<count), "the up lines are the queries in send order")
            #expect(up.allSatisfy { $0["qname"] as? String == "localhost" })
            let forwarded = Set(up.filter { $0["action"] as? String == "forward" }.compactMap { $0["id"] as? Int })
            #expect(forwarded.count < count && forwarded.count > count / 2, "seeded up loss: \(forwarded.count) of \(count)")
            #expect(Set(down.compactMap { $0["id"] as? Int }).isSubset(of: forwarded), "answers only to forwarded queries")
            #expect(down.allSatisfy { $0["qr"] as? Int == 1 && $0["qname"] as? String == "localhost" })
            // What reached the client is what the down lines say, id by id.
            var expected: [Int: Int] = [:]
            for line in down where line["action"] as? String == "forward" {
                expected[line["id"] as! Int, default: 0] += line["copies"] as! Int
            }
            #expect(arrivals == expected.filter { $0.value > 0 })
            #expect(down.contains { $0["action"] as? String == "drop" } && down.contains { ($0["copies"] as? Int) == 2 })
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func aRelayThatRefusesItsFlagsFailsUpAndLeavesNothing() async throws {
        try LabGate.labWithBinary.check()
        let bad = config(["--up-loss", "2"])
        await #expect {
            try await Lab.up(bad, logger: LabFixture.logger)
        } throws: { error in
            guard let error = error as? LabError else { return false }
            return error.code == .startFailed && error.message.contains("impair relay exited during start")
                && error.message.contains("--up-loss: 2 is not a probability")
        }
        #expect(try LabFixture.leftovers(name: bad.name) == [])
    }

    @Test func theLabOwnsTheRelaysEndpointsAndLog() {
        for flag in ["--listen", "--upstream", "--log"] {
            #expect(throws: LabError.self) { try config([flag, "x"]).validate() }
        }
        #expect(throws: Never.self) { try config(["--up-loss", "0.1"]).validate() }
    }
}
