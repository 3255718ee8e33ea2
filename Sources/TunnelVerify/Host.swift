import Base
import OSLayer
import Foundation

/// External programs and the few raw system calls `verify` makes, every failure a `VerifyError`.
enum Host {
    static var isRoot: Bool { ProcessControl.isRoot }

    static func locate(_ program: String) -> String? { Executables.locate(program) }

    /// `package` is a Debian package name, or a sentence saying where the program comes from when
    /// no registry has it (MasterDnsVPN).
    static func require(_ program: String, package: String) throws(VerifyError) -> String {
        guard let path = locate(program) else {
            let hint = package.contains(" ") ? package : "install the Debian package \(package) (apt-get install \(package))"
            throw VerifyError(.missingTool, "`\(program)` not found: \(hint)")
        }
        return path
    }

    typealias Outcome = ProgramRun.Outcome

    /// Runs `argv` to its end. A detached task, so a cancelled run (SIGINT) never cuts an `ip` or
    /// `nft` step in half: the caller checks cancellation between steps.
    static func run(_ argv: [String]) async throws(VerifyError) -> Outcome {
        let result = await Task.detached { () async -> Result<Outcome, VerifyError> in
            do throws(VerifyError) { return .success(try await runHere(argv)) } catch { return .failure(error) }
        }.value
        return try result.get()
    }

    private static func runHere(_ argv: [String]) async throws(VerifyError) -> Outcome {
        do {
            return try await ProgramRun.run(argv)
        } catch {
            throw VerifyError(.sandboxFailed, "\(error)")
        }
    }

    /// Runs `argv`; a non-zero exit throws with its last line of stderr.
    @discardableResult
    static func check(_ argv: [String]) async throws(VerifyError) -> String {
        let outcome = try await run(argv)
        guard outcome.status == 0 else {
            let reason = lastLine(outcome.error) ?? lastLine(outcome.output) ?? "no output"
            throw VerifyError(.sandboxFailed, "`\(argv.joined(separator: " "))` failed with status \(outcome.status): \(reason)")
        }
        return outcome.output
    }

    static func lastLine(_ text: String) -> String? { ProgramRun.lastLine(text) }

    static func lastLines(_ text: String, count: Int) -> [String] {
        text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.suffix(count)
    }

    static func readText(_ path: String) -> String? {
        FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Writes `text` to a temporary file beside `path` and renames it over `path`, so a reader
    /// (another run reclaiming orphans) sees the old or the new content, never half of one.
    static func replaceFile(_ path: String, _ text: String) throws(VerifyError) {
        do {
            try AtomicFile.write(path, Array(text.utf8))
        } catch {
            throw VerifyError(.sandboxFailed, "cannot write \(path): \(error.errno)")
        }
    }

    static func writeFile(_ path: String, _ text: String, mode: Int = 0o644) throws(VerifyError) {
        let ok = FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: mode])
        guard ok else { throw VerifyError(.sandboxFailed, "cannot write \(path)") }
    }

    /// Writes a /proc/sys value in place (no temporary file: procfs has no rename).
    static func writeProc(_ path: String, _ value: String) throws(VerifyError) {
        do {
            try SystemCall.writeInPlace(path, Array(value.utf8))
        } catch {
            throw VerifyError(.sandboxFailed, "cannot write \(path): \(error)")
        }
    }

    static func makeDirectory(_ path: String) throws(VerifyError) {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw VerifyError(.sandboxFailed, "cannot create \(path): \(error)")
        }
    }

    /// Seconds since `path` was last modified, `nil` when it does not exist.
    static func age(_ path: String) -> Double? {
        FileStatus.modificationSeconds(path).map { Date().timeIntervalSince1970 - Double($0) }
    }

    static func exists(_ path: String) -> Bool { FileStatus.exists(path) }

    /// The start time of a live process (field 22 of /proc/PID/stat), `nil` when it is gone or a zombie.
    static func startTime(of pid: Int32) -> UInt64? {
        guard pid > 1, let stat = ProcessStat.of(pid), stat.isAlive else { return nil }
        return stat.startTime
    }

    /// This process's PID namespace: a pid recorded in another one means nothing here.
    static var pidNamespace: UInt64? { inode("/proc/self/ns/pid") }

    /// The inode that names a namespace (of a mount point or a /proc/PID/ns link).
    static func inode(_ path: String) -> UInt64? { FileStatus.identity(path)?.inode }

    /// Every process whose network namespace has this inode (what `ip netns pids` does, and it
    /// also works after the namespace's mount point is gone).
    static func processes(inNamespace inode: UInt64) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).filter { pid in
            Host.inode("/proc/\(pid)/ns/net") == inode && startTime(of: pid) != nil
        }
    }

    static func signal(_ pid: Int32, _ signal: Int32) { ProcessControl.signal(pid, signal) }

    /// SIGTERM, up to `grace` to exit, then SIGKILL.
    static func terminate(_ pids: [Int32], grace: Duration = .seconds(1)) async {
        await ProcessControl.terminate(pids, grace: grace)
    }

    /// A counter of /sys/class/net/IFACE/statistics, read in the namespace the path was opened in.
    static func counter(_ path: String) -> UInt64? {
        readText(path).flatMap { UInt64($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }
}
