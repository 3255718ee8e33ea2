public import EngineModels
import Foundation
public import Results

/// Which MasterDnsVPN client `verify` runs. The Go edition is a program that is told its files
/// (`-config`, `-resolvers`); the Python edition is a script, `client.py`, that reads
/// `client_config.toml` and `client_resolvers.txt` only from its own directory
/// (dns_utils/config_loader.py, get_app_dir), so verify runs a private copy of that directory per
/// run with the two files written beside the copy (`MasterDnsVPNPythonScript`).
public enum MasterDnsVPNEdition: String, Sendable, Hashable, Codable, CaseIterable {
    case go, python

    /// The edition `--engine-path` names: a file named `*.py` (the edition's `client.py`) or a
    /// directory (holding `client.py`) is the Python edition; any other path, or none
    /// (`masterdnsvpn-client` on PATH), the Go edition's program. Whether the path is really
    /// there is checked when the engine is located.
    public static func of(enginePath: String?) -> MasterDnsVPNEdition {
        guard let enginePath else { return .go }
        if enginePath.hasSuffix(".py") { return .python }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: enginePath, isDirectory: &isDirectory), isDirectory.boolValue { return .python }
        return .go
    }

    /// The engine model of the edition (its units and limits, `EngineModels`).
    public var model: Results.Engine {
        switch self {
        case .go: .masterDnsVPNGo
        case .python: .masterDnsVPNPython
        }
    }

    public var displayName: String {
        switch self {
        case .go: "Go edition"
        case .python: "Python edition"
        }
    }

    /// Whether the edition's client can build its queries with `method`. The Go client can with
    /// every method; the Python client cannot with AES-GCM (`MasterDnsVPNPythonModel.buildsItsQueries`).
    public func runs(_ method: EncryptionMethod) -> Bool {
        switch self {
        case .go: true
        case .python: MasterDnsVPNPythonModel(encryption: method).buildsItsQueries
        }
    }

    /// The strongest method the edition can run, which the seed's `"maximum"` names: AES-256-GCM for
    /// the Go edition, ChaCha20 for the Python edition (a 256-bit key as well).
    public var strongest: EncryptionMethod {
        let order: [EncryptionMethod] = [.aes256GCM, .chacha20, .aes192GCM, .aes128GCM, .xor, .none]
        return order.first(where: runs) ?? .xor
    }
}
