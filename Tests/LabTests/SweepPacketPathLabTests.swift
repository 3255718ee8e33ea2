import Foundation
import Glibc
import Lab
import ProbeClient
import Testing
import TestSupport

/// A client namespace behind a veth to the simulated internet (as a user's machine behind its
/// router): 198.18.255.2/30 here, 198.18.255.1/30 on the simulated side, 198.19.0.0/16 routed via
/// it. The simulated side checks UDP checksums in software (receive offload off), so a frame with
/// a wrong one is dropped rather than answered. Removed (with the veth) by `remove`.
final class ClientNamespace {
    let name: String
    private var removed = false

    init(behind sim: SimulatedInternetProcess) throws {
        var tag = ""
        for _ in 0..<6 { tag.append(String(UInt8.random(in: 0...15), radix: 16)) }
        name = "tppk-\(tag)"
        let client = "tppk\(tag)c", simSide = "tppk\(tag)s"
        do {
            for command in [["ip", "netns", "add", name], ["ip", "-n", name, "link", "set", "lo", "up"],
                            ["ip", "link", "add", client, "netns", name, "type", "veth", "peer", "name", simSide, "netns", sim.namespace],
                            ["ip", "-n", name, "addr", "add", "198.18.255.2/30", "dev", client],
                            ["ip", "-n", sim.namespace, "addr", "add", "198.18.255.1/30", "dev", simSide],
                            ["ip", "-n", name, "link", "set", client, "up"], ["ip", "-n", sim.namespace, "link", "set", simSide, "up"],
                            ["ip", "-n", name, "route", "add", "198.19.0.0/16", "via", "198.18.255.1"],
                            ["ip", "netns", "exec", sim.namespace, "ethtool", "-K", simSide, "rx", "off"]] {
                try Self.run(command)
            }
        } catch {
            remove()
            throw error
        }
    }

    deinit { remove() }

    /// Deletes the namespace (its end of the veth goes with it, and the peer with that).
    func remove() {
        guard !removed else { return }
        removed = true
        try? Self.run(["ip", "netns", "del", name])
    }

    static func run(_ command: [String]) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = command
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        guard p.waitUntilExitOrKill(seconds: 20), p.terminationStatus == 0 else {
            throw SweepLabFailure("\(command.joined(separator: " ")) failed")
        }
    }

    /// `tunnelprobe sweep --sweep-only` from this namespace against `sim`; its exit status.
    func sweep(_ sim: SimulatedInternetProcess, _ arguments: [String]) throws -> Int32 {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["ip", "netns", "exec", name, TestEnvironment.binary, "sweep", "--domain", "vpn.sim.test",
                       "--key-file", sim.dir + "/key.hex", "--quiet", "--sweep-only"] + arguments
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        guard p.waitUntilExitOrKill(seconds: 40) else { throw SweepLabFailure("the sweep did not exit") }
        return p.terminationStatus
    }
}

// Root, iproute2, ethtool (the simulated side's receive offload off) and a built binary.
@Suite(.serialized, .enabled(if: LabGate(tools: [("ip", "iproute2"), ("ethtool", "ethtool")], binary: true).runs,
                             "needs root, iproute2, ethtool and a built binary"))
struct SweepPacketPathLabTests {

    struct SendPathFields: Decodable {
        struct Path: Decodable { var used: String; var reason: String; var interface: String? }
        var sendPath: Path?
        var sentThisRun: UInt64
    }

    /// A /20 of the simulated internet (3 % answering, no loss) swept from a client namespace behind
    /// a veth, once with `--send-path udp` and once with `--send-path packet` (each against its own
    /// simulated internet of the same seed): the same answering set, every address of the /20 sent
    /// exactly one probe by the packet path (counted by the simulated hosts, which drop a datagram
    /// whose UDP checksum is wrong), and sweep.json naming the path used.
    @Test(.timeLimit(.minutes(1)))
    func packetPathFindsWhatTheUDPPathFinds() async throws {
        try LabGate(tools: [("ip", "iproute2"), ("ethtool", "ethtool")], binary: true).check()
        var answering: [String: Set<String>] = [:]
        for path in ["udp", "packet"] {
            let sim = try SimulatedInternetProcess(seed: 31, answering: 0.03, extra: ["--loss-rate", "0"])
            var stopped = false
            defer { if !stopped { sim.stop() } }
            let client = try ClientNamespace(behind: sim)
            defer { client.remove() }
            let ranges = sim.dir + "/slash20.txt"
            try "198.19.16.0/20\n".write(toFile: ranges, atomically: true, encoding: .utf8)
            let out = sim.dir + "/report-\(path)"
            let status = try client.sweep(sim, ["--ranges", ranges, "--rate", "20000", "--timeout", "1", "--seed", "7",
                                                "--send-path", path, "--out", out])
            #expect(status == 0, "\(path): exit status \(status)")
            let fields = try JSONDecoder().decode(SendPathFields.self, from: Data(contentsOf: URL(fileURLWithPath: out + "/sweep.json")))
            #expect(fields.sendPath?.used == path, "\(path): \(fields.sendPath?.reason ?? "no sendPath")")
            #expect(fields.sentThisRun == 4096)
            answering[path] = Set(try String(contentsOfFile: out + "/answering.txt", encoding: .utf8).split(separator: "\n").map(String.init))
            let truth = try sim.truth
            stopped = true
            let counts = try #require(sim.stop(), "lab internet wrote no probes.json")
            #expect(counts.sweepProbes == 4096 && counts.addressesProbed == 4096 && counts.probedTwice.isEmpty,
                    "\(path): \(counts.sweepProbes) probes to \(counts.addressesProbed) addresses, \(counts.probedTwice.count) probed twice")
            let inRange = Set(truth.hosts.map(\.address).filter { ($0.hasPrefix("198.19.") && (Int($0.split(separator: ".")[2]) ?? 0) >> 4 == 1) })
            #expect(inRange.count > 60, "the /20 holds \(inRange.count) answering hosts")
            #expect(answering[path]?.isSubset(of: inRange) == true)
        }
        let udp = answering["udp"] ?? [], packet = answering["packet"] ?? []
        #expect(!packet.isEmpty && packet == udp,
                "packet found \(packet.count), udp \(udp.count); only udp: \(udp.subtracting(packet).sorted().prefix(5)), only packet: \(packet.subtracting(udp).sorted().prefix(5))")
    }
}
