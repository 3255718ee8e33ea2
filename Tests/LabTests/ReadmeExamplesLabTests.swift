import Foundation
@testable import Lab
import Testing
import TestSupport

/// Issue 27: every command the README shows against the lab runs as written on a fresh lab. Such
/// blocks carry the marker line `<!-- lab-example -->` right above their fence; a block that drives
/// the lab (`tunnelprobe lab ...`) without the marker fails `everyLabExampleIsMarked`, so a new
/// example cannot escape. The only substitutions, as the README says: the lab's name (in `--name`
/// and in /run/tunnelprobe/labs/NAME/) becomes a fresh one, and `tunnelprobe` the binary under test.
@Suite(.serialized) struct ReadmeExamplesLabTests {
    static let marker = "<!-- lab-example -->"

    struct Example {
        var line: Int
        var commands: [String]
    }

    /// The marked blocks (their commands, continuation lines joined, comments dropped) and the line of
    /// every unmarked block that runs `tunnelprobe lab`.
    static func examples(_ readme: String) -> (marked: [Example], unmarked: [Int]) {
        let lines = readme.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var marked: [Example] = [], unmarked: [Int] = []
        var i = 0
        while i < lines.count {
            guard lines[i].hasPrefix("```") else { i += 1; continue }
            let open = i
            var body: [String] = []
            i += 1
            while i < lines.count, !lines[i].hasPrefix("```") { body.append(lines[i]); i += 1 }
            i += 1
            let previous = lines[..<open].last { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
            if previous == marker {
                marked.append(Example(line: open + 1, commands: commands(body)))
            } else if body.contains(where: { $0.contains("tunnelprobe lab ") }) {
                unmarked.append(open + 1)
            }
        }
        return (marked, unmarked)
    }

    static func commands(_ body: [String]) -> [String] {
        var out: [String] = []
        var current = ""
        for raw in body {
            var line = raw
            if let hash = line.range(of: "  #") { line = String(line[..<hash.lowerBound]) }
            line = line.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasSuffix("\\") {
                current += String(line.dropLast()) + " "
            } else {
                out.append(current + line)
                current = ""
            }
        }
        return out
    }

    static func readme() throws -> String {
        try String(contentsOf: TestEnvironment.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
    }

    /// The lab name a block's `lab up --name X` gives.
    static func labName(_ commands: [String]) -> String? {
        guard let up = commands.first(where: { $0.hasPrefix("tunnelprobe lab up") }) else { return nil }
        let words = up.split(separator: " ")
        guard let i = words.firstIndex(of: "--name"), i + 1 < words.count else { return "default" }
        return String(words[i + 1])
    }

    @Test(.enabled(if: LabGate.tunnelLab.runs, "README lab examples need root, the engines and the binary"), .timeLimit(.minutes(3)))
    func labExamplesRunAsWritten() async throws {
        try LabGate.tunnelLab.check()
        let binary = TestEnvironment.binary
        for example in Self.examples(try Self.readme()).marked {
            // A block of the simulated internet (`lab internet ... -- command`) brings up and removes its own namespace.
            let internet = example.commands.contains { $0.hasPrefix("tunnelprobe lab internet") }
            let written = try #require(Self.labName(example.commands) ?? (internet ? "" : nil), "line \(example.line): no lab up")
            let name = LabFixture.uniqueName()
            let work = FileManager.default.temporaryDirectory.appendingPathComponent("tp-readme-\(name)").path
            try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: work) }
            func substitute(_ command: String) -> String {
                var c = command.replacingOccurrences(of: "--name \(written)", with: "--name \(name)")
                    .replacingOccurrences(of: "/run/tunnelprobe/labs/\(written)/", with: "/run/tunnelprobe/labs/\(name)/")
                c = c.replacingOccurrences(of: "-- tunnelprobe ", with: "-- \(binary) ")
                return c.hasPrefix("tunnelprobe ") ? binary + c.dropFirst("tunnelprobe".count) : c
            }
            let clock = ContinuousClock()
            var failed = false
            for command in example.commands where !failed {
                let started = clock.now
                let argv = ["/bin/bash", "-c", substitute(command)]
                let run = try await offCooperativePool { try LabFixture.shellCombined(argv, directory: work) }
                print("README line \(example.line): \(command.prefix(100))… exit \(run.status) in \(clock.now - started)")
                if run.status != 0 {
                    failed = true
                    Issue.record("README line \(example.line): `\(command)` exited \(run.status):\n\(run.output.suffix(3000))")
                }
            }
            if failed, !internet {
                let down = [binary, "lab", "down", "--name", name]
                _ = try? await offCooperativePool { try LabFixture.shellCombined(down, directory: work) }
            }
            #expect(try LabFixture.leftovers(name: name).isEmpty)
        }
    }
}

/// The README's lab blocks are all marked (no lab needed: `make check` runs it).
@Suite struct ReadmeExamplesTests {
    @Test func everyLabExampleIsMarked() throws {
        let found = ReadmeExamplesLabTests.examples(try ReadmeExamplesLabTests.readme())
        #expect(found.unmarked.isEmpty, "README blocks at lines \(found.unmarked) run the lab without \(ReadmeExamplesLabTests.marker)")
        #expect(!found.marked.isEmpty)
        for example in found.marked {
            // A block of the simulated internet runs its sweep inside one `lab internet ... -- command`,
            // which removes its namespace when the command ends; its other lines only write and read files.
            if example.commands.contains(where: { $0.hasPrefix("tunnelprobe lab internet") }) {
                let lab = example.commands.filter { $0.contains("tunnelprobe lab ") }
                #expect(lab.allSatisfy { $0.hasPrefix("tunnelprobe lab internet") && $0.contains(" -- tunnelprobe ") }, "line \(example.line)")
                #expect(example.commands.allSatisfy { ["tunnelprobe ", "printf ", "grep "].contains(where: $0.hasPrefix) }, "line \(example.line)")
                continue
            }
            // Each block brings its own lab up first and takes it down last, so the test leaves nothing.
            #expect(example.commands.first?.hasPrefix("tunnelprobe lab up") == true, "line \(example.line)")
            #expect(example.commands.last?.hasPrefix("tunnelprobe lab down") == true, "line \(example.line)")
            #expect(example.commands.allSatisfy { $0.hasPrefix("tunnelprobe ") }, "line \(example.line)")
        }
    }
}

extension LabFixture {
    /// Runs a program in `directory` and returns its status with its standard output and error.
    static func shellCombined(_ argv: [String], directory: String) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = argv
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        let log = directory + "/command.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        defer { try? handle.close() }
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        process.waitUntilExit()
        return (process.terminationStatus, (try? String(contentsOfFile: log, encoding: .utf8)) ?? "")
    }
}
