import Foundation
import Testing
import TestSupport

/// `tunnelprobe path`: each bad input and an absent responder give exactly one error line and their
/// documented exit code (64 usage, 66 input, 69 environment). In process, through the binary's entry
/// point; the signal tests (SIGINT, SIGTERM to `serve`) stay with the binary (LabTests, `PathCommandTests`).
struct PathCommandInputTests {
    static func keyFile() throws -> String {
        try InProcess.temporary("probe.key", String(repeating: "ab", count: 32))
    }

    /// Every bad input is refused before anything is sent.
    @Test(.timeLimit(.minutes(1))) func badInputGivesOneErrorLine() async throws {
        let key = try Self.keyFile()
        defer { try? FileManager.default.removeItem(atPath: (key as NSString).deletingLastPathComponent) }
        let base = ["path", "--domain", "vpn.lab.test", "--quiet"]
        let cases: [([String], Int32, String)] = [
            (["--key-file", key, "--resolver", "127.0.0.1", "--rate", "0", "--count", "5"], 64, "--rate"),
            (["--key-file", key, "--resolver", "127.0.0.1", "--count", "5", "--duration", "2"], 64, "exactly one of --count and --duration"),
            (["--key-file", key, "--resolver", "127.0.0.1"], 64, "exactly one of --count and --duration"),
            (["--key-file", key, "--resolver", "127.0.0.1", "--count", "5", "--record-type", "HINFO"], 64, "--record-type"),
            (["--key-file", key, "--resolver", "not-an-address", "--count", "5"], 64, "--resolver not-an-address"),
            (["--key-file", key, "--resolver", "127.0.0.1", "--count", "5", "--size", "10:x"], 64, "--size"),
            (["--key-file", "/nonexistent/probe.key", "--resolver", "127.0.0.1", "--count", "5"], 66, "key file"),
        ]
        for (extra, code, text) in cases {
            let r = await InProcess.run(base + extra)
            let lines = r.stderr.split(separator: "\n")
            #expect(r.status == code, "\(extra): exit \(r.status), \(r.stderr)")
            #expect(lines.count == 1 && lines[0].hasPrefix("tunnelprobe: error:") && lines[0].contains(text), "\(extra): \(r.stderr)")
            #expect(r.stdout.isEmpty, "\(extra): \(r.stdout)")
        }
    }

    /// Nothing answers on the port: after `--absent-after` the run stops with one line and exit 69,
    /// and its report is still written.
    @Test(.timeLimit(.minutes(1))) func anAbsentResponderIsOneErrorLine() async throws {
        let key = try Self.keyFile()
        let directory = (key as NSString).deletingLastPathComponent
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let r = await InProcess.run(["path", "--domain", "vpn.lab.test", "--key-file", key, "--quiet", "--out", directory + "/out",
                                     "--resolver", "127.0.0.1:\(LoopbackPort.unused())", "--count", "100000", "--rate", "200",
                                     "--absent-after", "0.5", "--tmax", "0.3"])
        #expect(r.status == 69, "exit \(r.status): \(r.stderr)")
        let lines = r.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].hasPrefix("tunnelprobe: error: responder absent"), "\(r.stderr)")
        #expect(FileManager.default.fileExists(atPath: directory + "/out/path.json"))
    }
}
