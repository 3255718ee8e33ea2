import Base
import OSLayer
import Foundation

/// MasterDnsVPN's Python edition as verify runs it (masterking32/MasterDnsVPN at 012b7d3: client.py,
/// dns_utils/, build_version.py at the repository root). The client reads `client_config.toml` and
/// `client_resolvers.txt` beside `client.py` (the directory of `sys.argv[0]`), so each run gets a
/// private copy of the script directory in the sandbox's own directory, with the two files verify
/// writes from the profile beside the copy; it goes with the sandbox. The user's directory is
/// never written to.
struct MasterDnsVPNPythonScript: Sendable, Hashable {
    static let scriptName = "client.py"
    /// The edition's package beside `client.py`; its presence tells the edition's client from any
    /// other `client.py`.
    static let package = "dns_utils"

    /// The user's `client.py`.
    let script: String
    var directory: String { (script as NSString).deletingLastPathComponent }

    /// `client.py`, or a directory holding it, checked to be the edition's client.
    static func locate(_ path: String) throws(VerifyError) -> MasterDnsVPNPythonScript {
        let fileManager = FileManager.default
        var isDirectory: ObjCBool = false
        guard fileManager.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw VerifyError(.missingTool, "--engine-path \(path): nothing there (give MasterDnsVPN's Go client, or the Python edition's client.py or its directory)")
        }
        let script = isDirectory.boolValue ? (path as NSString).appendingPathComponent(scriptName) : path
        let absolute = URL(fileURLWithPath: script).standardizedFileURL.path
        guard (absolute as NSString).lastPathComponent == scriptName, fileManager.isReadableFile(atPath: absolute) else {
            throw VerifyError(.missingTool, isDirectory.boolValue
                ? "--engine-path \(path): no readable \(scriptName) in that directory (the MasterDnsVPN Python edition's client)"
                : "--engine-path \(path): the MasterDnsVPN Python edition's client is \(scriptName) (or give its directory)")
        }
        let found = MasterDnsVPNPythonScript(script: absolute)
        guard fileManager.fileExists(atPath: found.directory + "/" + package + "/__init__.py") else {
            throw VerifyError(.missingTool, "--engine-path \(path): no \(package)/ beside \(scriptName): not the MasterDnsVPN Python edition's client directory")
        }
        return found
    }

    /// Copies what the client runs from (every top-level `.py` module and every package directory,
    /// one holding `__init__.py`, without `__pycache__`) into `destination`. Nothing else of the
    /// user's directory: not its config, resolver list, DNS cache or key file, nor a virtualenv.
    func copy(into destination: String) throws(VerifyError) {
        let fileManager = FileManager.default
        do {
            try fileManager.createDirectory(atPath: destination, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            for name in try fileManager.contentsOfDirectory(atPath: directory).sorted() {
                let source = directory + "/" + name
                var isDirectory: ObjCBool = false
                guard fileManager.fileExists(atPath: source, isDirectory: &isDirectory) else { continue }
                if isDirectory.boolValue {
                    guard fileManager.fileExists(atPath: source + "/__init__.py") else { continue }
                    try copyPackage(source, to: destination + "/" + name)
                } else if name.hasSuffix(".py") {
                    try fileManager.copyItem(atPath: source, toPath: destination + "/" + name)
                }
            }
        } catch {
            throw VerifyError(.sandboxFailed, "cannot copy the MasterDnsVPN Python edition from \(directory) to \(destination): \(error)")
        }
    }

    private func copyPackage(_ source: String, to destination: String) throws {
        let fileManager = FileManager.default
        try fileManager.createDirectory(atPath: destination, withIntermediateDirectories: true)
        for name in try fileManager.contentsOfDirectory(atPath: source).sorted() where name != "__pycache__" {
            let path = source + "/" + name
            var isDirectory: ObjCBool = false
            guard fileManager.fileExists(atPath: path, isDirectory: &isDirectory) else { continue }
            if isDirectory.boolValue {
                try copyPackage(path, to: destination + "/" + name)
            } else {
                try fileManager.copyItem(atPath: path, toPath: destination + "/" + name)
            }
        }
    }

    // MARK: - the interpreter

    /// The third-party modules the edition imports, by the pip package that provides each
    /// (requirements.txt at 012b7d3). `uvloop` is left out: the client falls back to asyncio's own
    /// loop without it and says so. `tomli` only before Python 3.11 (dns_utils/config_loader.py uses
    /// `tomllib` from 3.11 on).
    static let requirements: [(module: String, package: String)] = [
        ("loguru", "loguru"), ("cryptography", "cryptography"), ("zstandard", "zstandard"), ("lz4", "lz4"),
    ]
    /// The client's annotations use `X | Y` at definition time (client.py `_parse_resolver_entry`):
    /// Python 3.10 or newer.
    static let minimumVersion = (3, 10)

    /// The check, as one `python -c` program: prints the interpreter's `major.minor` and then the pip
    /// packages whose modules it cannot find.
    static var checkProgram: String {
        let pairs = requirements.map { "(\"\($0.module)\", \"\($0.package)\")" }.joined(separator: ", ")
        return """
            import sys, importlib.util
            need = [\(pairs)]
            if sys.version_info < (3, 11): need.append(("tomli", "tomli"))
            print("%d.%d" % sys.version_info[:2], *[p for m, p in need if importlib.util.find_spec(m) is None])
            """
    }

    /// What the check's output says: the version and the missing packages; nil when it is not the
    /// check's answer.
    static func readCheck(_ output: String) -> (version: (Int, Int), missing: [String])? {
        guard let line = output.split(whereSeparator: \.isNewline).last(where: { !$0.allSatisfy(\.isWhitespace) }) else { return nil }
        let words = line.split(whereSeparator: \.isWhitespace).map(String.init)
        let parts = words.first?.split(separator: ".").compactMap { Int($0) } ?? []
        guard parts.count == 2 else { return nil }
        return ((parts[0], parts[1]), Array(words.dropFirst()))
    }

    /// Checks that `python` runs and has the modules the client imports; one line naming what is
    /// missing and the pip packages to install otherwise.
    static func checkInterpreter(_ python: String) async throws(VerifyError) {
        let outcome: ProgramRun.Outcome
        do {
            outcome = try await ProgramRun.run([python, "-c", checkProgram])
        } catch {
            throw VerifyError(.missingTool, "\(python) cannot run: \(error.reason) (the MasterDnsVPN Python edition needs Python \(minimumVersion.0).\(minimumVersion.1) or newer)")
        }
        guard outcome.status == 0, let check = readCheck(outcome.output) else {
            let why = ProgramRun.lastLine(outcome.error) ?? ProgramRun.lastLine(outcome.output) ?? "no output"
            throw VerifyError(.missingTool, "\(python) did not answer the module check (status \(outcome.status): \(why)); the MasterDnsVPN Python edition needs Python \(minimumVersion.0).\(minimumVersion.1) or newer")
        }
        guard check.version >= minimumVersion else {
            throw VerifyError(.missingTool, "\(python) is Python \(check.version.0).\(check.version.1): the MasterDnsVPN Python edition needs \(minimumVersion.0).\(minimumVersion.1) or newer")
        }
        guard check.missing.isEmpty else {
            let list = check.missing.joined(separator: " ")
            throw VerifyError(.missingTool, "\(python) lacks the MasterDnsVPN Python edition's module\(check.missing.count == 1 ? "" : "s") \(check.missing.joined(separator: ", ")): install with `\(python) -m pip install \(list)` (its requirements.txt; uvloop is optional)")
        }
    }
}
