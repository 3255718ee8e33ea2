import Foundation
@testable import Lab
import Logging
import Testing
import TestSupport

/// Shared by the lab lifecycle and resolver tests. Everything lives in this namespace so that it
/// cannot collide with helpers of other files in the module.
enum LabFixture {
    static let logger: Logger = {
        var logger = Logger(label: "lab-tests", factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = .warning
        return logger
    }()

    /// A fresh name per test ("l" + 7 random characters) so that runs never collide.
    static func uniqueName() -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789")
        return "l" + String((0..<7).map { _ in alphabet.randomElement()! })
    }

    /// A responder stand-in that does not listen: it prints its arguments to its log (so a test
    /// can see the flags the lab appended) and sleeps.
    static let sleepingResponder = ["/bin/sh", "-c", #"echo "args: $*"; exec sleep 600"#, "stand-in"]

    static func config(
        name: String = uniqueName(),
        udpLimit: Int? = nil,
        capsForID: Bool = false,
        qnameMinimisation: Bool = true,
        serverCommand: [String] = sleepingResponder,
        readiness: LabConfig.ResponderReadiness = .processAlive
    ) -> LabConfig {
        LabConfig(
            name: name,
            resolverUDPLimit: udpLimit,
            resolverCapsForID: capsForID,
            qnameMinimisation: qnameMinimisation,
            serverCommand: serverCommand,
            responderReadiness: readiness
        )
    }

    /// Brings a lab up for `body` and always takes it down afterwards, also when `up` or `body`
    /// throws (failed expectations do not throw, so `down` runs after them too).
    static func withLab(_ config: LabConfig, _ body: (LabStatus) async throws -> Void) async throws {
        try LabGate.lab.check()
        do {
            let status = try await Lab.up(config, logger: logger)
            try await body(status)
        } catch {
            try? await Lab.down(name: config.name, stateRoot: config.stateRoot, logger: logger)
            throw error
        }
        try await Lab.down(name: config.name, stateRoot: config.stateRoot, logger: logger)
    }

    /// Runs a program to completion and returns its status and standard output.
    static func shell(_ argv: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = argv
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// Records every trace a lab of this name could leave that is still there.
    static func leftovers(name: String, stateRoot: String = LabConfig.defaultStateRoot) throws -> [String] {
        let topology = LabTopology(name: name)
        var found: [String] = []
        let namespaces = try shell(["ip", "netns", "list"]).output
        for role in Lab.Role.allCases where namespaces.contains(topology.namespace(role)) {
            found.append("namespace \(topology.namespace(role))")
        }
        let links = try shell(["ip", "-o", "link", "show"]).output
        for link in topology.links where links.contains(link + "@") || links.contains(link + ":") {
            found.append("link \(link)")
        }
        let directory = LabState.directory(name: name, stateRoot: stateRoot)
        if FileManager.default.fileExists(atPath: directory) { found.append("state directory \(directory)") }
        found += processes(mentioning: directory + "/").map { "process \($0)" }
        return found
    }

    /// Live processes whose command line mentions `text` (every lab daemon's argv names a file in
    /// its state directory).
    static func processes(mentioning text: String) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).filter { pid in
            guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline"),
                  let snapshot = SystemCalls.process(pid), snapshot.isAlive else { return false }
            let commandLine = String(decoding: data.map { $0 == 0 ? 32 : $0 }, as: UTF8.self)
            return commandLine.contains(text)
        }
    }
}

/// An authoritative stand-in for the responder that runs inside the test process with a socket
/// in the server namespace. For `<n>.<anything>` TXT it answers with a message of exactly n bytes
/// (RFC 1035 section 4.1, one TXT record split into 255-byte strings); anything else gets an
/// empty NOERROR answer. It records every question name as received, case preserved.
final class StandInResponder: @unchecked Sendable {
    private let fd: Int32
    private let lock = NSLock()
    private var names: [String] = []
    private var task: Task<Void, Never>?

    init(lab: String) throws {
        let path = LabTopology(name: lab).namespacePath(.server)
        fd = try NamespaceSocket.udp(namespacePath: path)
        try NamespaceSocket.bind(fd, address: LabTopology.serverAddress, port: 53)
        task = Task { [self] in await serve() }
    }

    /// Question names received so far.
    var questions: [String] { lock.withLock { names } }

    /// Cancels the loop, which closes the socket when it ends (never under a running receive).
    func stop() {
        task?.cancel()
    }

    private func serve() async {
        defer { NamespaceSocket.close(fd) }
        while !Task.isCancelled {
            guard let datagram = NamespaceSocket.receive(fd) else {
                try? await Task.sleep(for: .milliseconds(2))
                continue
            }
            guard let (response, name) = StandInResponder.respond(to: datagram.bytes) else { continue }
            lock.withLock { names.append(name) }
            try? NamespaceSocket.send(fd, response, to: datagram.address, port: datagram.port)
        }
    }

    static func respond(to query: [UInt8]) -> ([UInt8], String)? {
        guard query.count >= 12 else { return nil }
        var index = 12
        var labels: [String] = []
        while index < query.count, query[index] != 0 {
            let length = Int(query[index])
            guard length < 64, index + 1 + length <= query.count else { return nil }
            labels.append(String(decoding: query[(index + 1)..<(index + 1 + length)], as: UTF8.self))
            index += 1 + length
        }
        guard index + 5 <= query.count else { return nil }
        let questionEnd = index + 5
        let type = UInt16(query[index + 1]) << 8 | UInt16(query[index + 2])
        let hasOPT = query[11] > 0 || query[10] > 0
        let question = Array(query[12..<questionEnd])
        let opt: [UInt8] = hasOPT ? [0, 0, 41, 0x10, 0x00, 0, 0, 0, 0, 0, 0] : []

        var answer: [UInt8] = []
        if type == 16, let first = labels.first, let target = Int(first) {
            let fixed = 12 + question.count + 2 + 10 + opt.count
            var room = target - fixed
            var rdata: [UInt8] = []
            while room > 0 {
                let length = min(room - 1, 255)
                rdata.append(UInt8(length))
                rdata += [UInt8](repeating: UInt8(ascii: "x"), count: length)
                room -= length + 1
            }
            answer = [0xc0, 0x0c, 0, 16, 0, 1, 0, 0, 0, 60, UInt8(rdata.count >> 8), UInt8(rdata.count & 0xff)] + rdata
        }
        let flags: UInt16 = 0x8400 | (UInt16(query[2] & 0x01) << 8)  // QR, AA, RD copied
        var header: [UInt8] = [query[0], query[1], UInt8(flags >> 8), UInt8(flags & 0xff), 0, 1]
        header += [0, answer.isEmpty ? 0 : 1, 0, 0, 0, hasOPT ? 1 : 0]
        return (header + question + answer + opt, labels.joined(separator: "."))
    }
}
